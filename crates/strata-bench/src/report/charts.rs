//! The report's charts as SVG, drawn with `plotters`: a horizontal bar chart per workload
//! (the LevelDB page's look), line charts of `--stats_interval` series, and line charts of
//! a benchmark against the setting a suite sweeps (value size, threads, entries).

use anyhow::{Result, anyhow};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Strata's bars: the one colour that stands out.
const STRATA: RGBColor = RGBColor(0xc0, 0x39, 0x2b);
/// Peers' bars.
const PEER: RGBColor = RGBColor(0x4a, 0x6f, 0x8a);
/// The 2011 page's bars, faded.
const PUBLISHED: RGBColor = RGBColor(0xd5, 0xd8, 0xdc);
const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const MUTED: RGBColor = RGBColor(0x88, 0x88, 0x88);
const AHEAD: RGBColor = RGBColor(0x1e, 0x84, 0x49);
const BEHIND: RGBColor = RGBColor(0xb0, 0x3a, 0x2e);

/// Line colours of the series charts, one per engine in order.
const LINES: [RGBColor; 16] = [
    STRATA,
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x39, 0x3b, 0x79),
    RGBColor(0x63, 0x79, 0x39),
    RGBColor(0x8c, 0x6d, 0x31),
    RGBColor(0x84, 0x3c, 0x39),
    RGBColor(0x7b, 0x41, 0x73),
    RGBColor(0x00, 0x00, 0x00),
];

/// What one bar of a workload's chart shows.
#[derive(Debug, Clone)]
pub enum Bar {
    /// An engine measured in this run: its figure in the chart's [`Scale`], and its time
    /// per operation relative to Strata's (`None` for Strata itself).
    Measured {
        /// Engine name.
        engine: String,
        /// Operations (entries) per second, or seconds, as the chart's scale says.
        value: f64,
        /// The engine's µs/op divided by Strata's.
        ratio: Option<f64>,
    },
    /// An engine that cannot run the workload.
    NotAvailable {
        /// Engine name.
        engine: String,
        /// Why.
        reason: String,
    },
    /// An engine that failed at the workload in every round that reached it (its
    /// process died, timed out or reported an error): drawn as a failure, never as zero.
    Failed {
        /// Engine name.
        engine: String,
        /// What happened.
        reason: String,
    },
    /// A figure from the 2011 page.
    Published {
        /// Engine name.
        engine: String,
        /// Operations per second the page published.
        ops_per_sec: f64,
    },
}

impl Bar {
    fn label(&self) -> String {
        match self {
            Bar::Measured { engine, .. }
            | Bar::NotAvailable { engine, .. }
            | Bar::Failed { engine, .. } => engine.clone(),
            Bar::Published { engine, .. } => format!("{engine} (2011 page)"),
        }
    }

    fn value(&self) -> f64 {
        match self {
            Bar::Measured { value, .. } => *value,
            Bar::Published { ops_per_sec, .. } => *ops_per_sec,
            Bar::NotAvailable { .. } | Bar::Failed { .. } => 0.0,
        }
    }
}

/// `1234567.8` as `1,234,568`.
pub fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let n = v.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An axis tick: `2.5M`, `300k`, `40`, `2.5`, `0.25`.
fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn draw_err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// What a bar chart's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Operations (or entries) per second: longer is better.
    PerSecond,
    /// Seconds a run took (a compaction): shorter is better.
    Seconds,
}

impl Scale {
    fn figure(self, v: f64) -> String {
        match self {
            Scale::PerSecond => thousands(v),
            Scale::Seconds => format!("{v:.2} s"),
        }
    }

    fn tick(self, v: f64) -> String {
        match self {
            Scale::PerSecond => short(v),
            Scale::Seconds => format!("{v:.2}"),
        }
    }
}

/// A vertical reference line across a bar chart: a ceiling no engine is part of.
#[derive(Debug, Clone)]
pub struct Reference {
    /// Where, in the chart's scale.
    pub value: f64,
    /// What it is.
    pub label: String,
}

/// The largest value a bar chart's axis must show: its bars' and its reference line's.
pub fn axis_max(bars: &[Bar], reference: Option<&Reference>) -> f64 {
    bars.iter()
        .map(Bar::value)
        .chain(reference.map(|r| r.value))
        .fold(0.0f64, f64::max)
}

/// A horizontal bar chart, first bar on top, each bar labelled with its figure and, for
/// peers, the ratio of its time per operation to Strata's; with a dashed reference line
/// when one is given.
pub fn bars(
    title: &str,
    unit: &str,
    scale: Scale,
    bars: &[Bar],
    reference: Option<&Reference>,
) -> Result<String> {
    let n = bars.len().max(1);
    let (width, height) = (860u32, 46 + 26 * n as u32 + 34);
    let max = axis_max(bars, reference);
    let xmax = if max > 0.0 { max * 1.55 } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17).into_font().color(&INK))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(190)
            .build_cartesian_2d(0f64..xmax, (0..n).into_segmented())
            .map_err(draw_err)?;
        // Segment 0 is at the bottom: bar i sits in segment n-1-i so the first is on top.
        let seg = |i: usize| n - 1 - i;
        let labels: Vec<String> = bars.iter().map(Bar::label).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .y_label_formatter(&|v: &SegmentValue<usize>| match v {
                SegmentValue::CenterOf(s) if *s < n => labels[n - 1 - *s].clone(),
                _ => String::new(),
            })
            .y_label_style(("sans-serif", 13).into_font().color(&INK))
            // One label per bar: plotters thins labels to the hint otherwise.
            .y_labels(n + 1)
            .x_labels(6)
            .x_label_formatter(&|x: &f64| scale.tick(*x))
            .x_desc(unit)
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                let color = bar_color(b)?;
                let mut r = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(seg(i))),
                        (b.value(), SegmentValue::Exact(seg(i) + 1)),
                    ],
                    color.filled(),
                );
                r.set_margin(4, 4, 0, 0);
                Some(r)
            }))
            .map_err(draw_err)?;
        let left = Pos::new(HPos::Left, VPos::Center);
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let at = (b.value() + xmax * 0.01, SegmentValue::CenterOf(seg(i)));
                let (text, color) = bar_text(b, scale);
                Text::new(
                    text,
                    at,
                    ("sans-serif", 12).into_font().color(&color).pos(left),
                )
            }))
            .map_err(draw_err)?;
        if let Some(r) = reference {
            let dashed = DashedLineSeries::new(
                [
                    (r.value, SegmentValue::Exact(0)),
                    (r.value, SegmentValue::Exact(n)),
                ],
                6,
                4,
                INK.stroke_width(1),
            );
            chart.draw_series(dashed).map_err(draw_err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{}: {}", r.label, scale.figure(r.value)),
                    (r.value + xmax * 0.01, SegmentValue::Exact(n)),
                    ("sans-serif", 11)
                        .into_font()
                        .color(&INK)
                        .pos(Pos::new(HPos::Left, VPos::Top)),
                )))
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// A bar's colour: Strata's, a peer's, a published figure's; none for a missing one.
fn bar_color(b: &Bar) -> Option<RGBColor> {
    match b {
        Bar::Measured { engine, .. } if engine == "strata" => Some(STRATA),
        Bar::Measured { .. } => Some(PEER),
        Bar::Published { .. } => Some(PUBLISHED),
        Bar::NotAvailable { .. } | Bar::Failed { .. } => None,
    }
}

/// The text beside a bar and its colour: the figure and, for a peer, its ratio to Strata
/// (green when Strata is ahead, red when behind).
fn bar_text(b: &Bar, scale: Scale) -> (String, RGBColor) {
    match b {
        Bar::Measured { ratio, value, .. } => {
            let mut t = scale.figure(*value);
            let mut c = INK;
            if let Some(r) = ratio {
                t.push_str(&format!("   x{r:.2}"));
                c = if *r >= 1.0 { AHEAD } else { BEHIND };
            }
            (t, c)
        }
        Bar::Published { ops_per_sec, .. } => (thousands(*ops_per_sec), MUTED),
        Bar::NotAvailable { reason, .. } => (format!("n/a: {reason}"), MUTED),
        Bar::Failed { reason, .. } => (format!("FAILED: {reason}"), BEHIND),
    }
}

/// One line of a series chart: an engine's (seconds, value) points.
pub struct Line {
    /// Engine name.
    pub engine: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

/// A line chart of throughput over time, one line per engine.
pub fn lines(title: &str, y_desc: &str, lines: &[Line]) -> Result<String> {
    let axes = SweepAxes {
        x_desc: "seconds",
        y_desc,
        log_x: false,
        time: true,
    };
    sweep(title, &axes, lines, None)
}

/// The axes of a sweep chart: what varies along x and what is drawn on y.
pub struct SweepAxes<'a> {
    /// The swept setting ("value size (bytes)").
    pub x_desc: &'a str,
    /// What each point is ("operations per second").
    pub y_desc: &'a str,
    /// A logarithmic x axis (the swept values span decades).
    pub log_x: bool,
    /// A time series: x from zero, no marker at every point (there is one a second).
    pub time: bool,
}

/// A line chart of one benchmark against a swept setting (or of a series against time),
/// one line (with a marker at each measured point) per engine; a dashed horizontal line at
/// `reference` when given.
pub fn sweep(
    title: &str,
    axes: &SweepAxes,
    lines: &[Line],
    reference: Option<&Reference>,
) -> Result<String> {
    let fx = |x: f64| if axes.log_x { x.max(1e-9).log10() } else { x };
    let xs = || lines.iter().flat_map(|l| l.points.iter().map(|p| fx(p.0)));
    let (lo, hi) = (
        xs().fold(f64::INFINITY, f64::min),
        xs().fold(f64::NEG_INFINITY, f64::max),
    );
    let (lo, hi) = if axes.time {
        (0.0, hi.max(1.0))
    } else if lo.is_finite() && hi > lo {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    } else {
        (0.0, 1.0)
    };
    // Figures spanning 100x or more (ops/s from 100-byte to 1 MB values) on a log axis,
    // so the small ones are not flat on the floor.
    let ys = || {
        lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .chain(reference.map(|r| r.value))
            .filter(|y| *y > 0.0)
    };
    let (ylo, yhi) = (
        ys().fold(f64::INFINITY, f64::min),
        ys().fold(0.0f64, f64::max),
    );
    let log_y = !axes.time && ylo.is_finite() && yhi / ylo >= 100.0;
    let fy = move |y: f64| if log_y { y.max(1e-9).log10() } else { y };
    let (ymin, ymax) = if log_y {
        (fy(ylo).floor(), fy(yhi) + 0.1)
    } else {
        (0.0, yhi.max(1e-9) * 1.12)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (860, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17).into_font().color(&INK))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(lo..hi, ymin..ymax)
            .map_err(draw_err)?;
        let log_x = axes.log_x;
        chart
            .configure_mesh()
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .x_desc(axes.x_desc)
            .y_desc(axes.y_desc)
            .x_label_formatter(&|x: &f64| short(if log_x { 10f64.powf(*x) } else { *x }))
            .y_label_formatter(&|y: &f64| short(if log_y { 10f64.powf(*y) } else { *y }))
            .draw()
            .map_err(draw_err)?;
        for (i, l) in lines.iter().enumerate() {
            let color = LINES[i % LINES.len()];
            let points: Vec<(f64, f64)> = l.points.iter().map(|p| (fx(p.0), fy(p.1))).collect();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(draw_err)?
                .label(l.engine.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            if !axes.time {
                chart
                    .draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                    .map_err(draw_err)?;
            }
        }
        if let Some(r) = reference {
            chart
                .draw_series(DashedLineSeries::new(
                    [(lo, fy(r.value)), (hi, fy(r.value))],
                    6,
                    4,
                    INK.stroke_width(1),
                ))
                .map_err(draw_err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{}: {}", r.label, short(r.value)),
                    (lo, fy(r.value)),
                    ("sans-serif", 11)
                        .into_font()
                        .color(&INK)
                        .pos(Pos::new(HPos::Left, VPos::Bottom)),
                )))
                .map_err(draw_err)?;
        }
        // The legend goes where the first line is not: below it when the line rises.
        let rises = lines
            .first()
            .and_then(|l| Some(l.points.last()?.1 > l.points.first()?.1))
            .unwrap_or(false);
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(MUTED)
            .position(if rises {
                SeriesLabelPosition::LowerRight
            } else {
                SeriesLabelPosition::UpperRight
            })
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(short(2_500_000.0), "2.5M");
        assert_eq!(short(300_000.0), "300k");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(0.0), "0");
    }

    #[test]
    fn a_bar_chart_names_every_bar() {
        let svg = bars(
            "1B readrandom",
            "operations per second",
            Scale::PerSecond,
            &[
                Bar::Measured {
                    engine: "strata".into(),
                    value: 200_000.0,
                    ratio: None,
                },
                Bar::Measured {
                    engine: "leveldb".into(),
                    value: 150_000.0,
                    ratio: Some(1.33),
                },
                Bar::NotAvailable {
                    engine: "kyoto-treedb".into(),
                    reason: "no atomic batches".into(),
                },
                Bar::Published {
                    engine: "leveldb".into(),
                    ops_per_sec: 129_000.0,
                },
            ],
            None,
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        for text in [
            "strata",
            "leveldb (2011 page)",
            "kyoto-treedb",
            "n/a: no atomic batches",
            "200,000",
            "x1.33",
            "129,000",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        // Three filled bars (n/a has none) in their colours.
        assert!(svg.contains("#C0392B") || svg.contains("#c0392b"));
    }

    #[test]
    fn times_and_a_reference_line_read_as_such() {
        let measured = |engine: &str, value: f64, ratio: Option<f64>| Bar::Measured {
            engine: engine.into(),
            value,
            ratio,
        };
        let svg = bars(
            "compact",
            "seconds (shorter is better)",
            Scale::Seconds,
            &[
                measured("strata", 0.12, None),
                measured("leveldb", 0.31, Some(2.58)),
            ],
            None,
        )
        .unwrap();
        for text in ["0.12 s", "0.31 s", "x2.58"] {
            assert!(svg.contains(text), "{text} missing");
        }
        let ceiling = Reference {
            value: 5_000.0,
            label: "disk ceiling".into(),
        };
        let bars_ = [measured("strata", 4_000.0, None)];
        assert_eq!(axis_max(&bars_, Some(&ceiling)), 5_000.0);
        let svg = bars(
            "fillsync",
            "operations per second",
            Scale::PerSecond,
            &bars_,
            Some(&ceiling),
        )
        .unwrap();
        assert!(
            svg.contains("disk ceiling: 5,000"),
            "reference line labelled"
        );
    }

    #[test]
    fn a_line_chart_has_a_legend() {
        let svg = lines(
            "1 reader",
            "reads per second",
            &[
                Line {
                    engine: "strata".into(),
                    points: vec![(1.0, 10.0), (2.0, 20.0)],
                },
                Line {
                    engine: "lmdb".into(),
                    points: vec![(1.0, 15.0), (2.0, 5.0)],
                },
            ],
        )
        .unwrap();
        assert!(svg.contains("strata") && svg.contains("lmdb"));
        assert!(svg.contains("<polyline") || svg.contains("<path"));
    }
}
