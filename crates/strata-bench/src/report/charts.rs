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
    // Not black: the axes are drawn black, and a line must not share their colour.
    RGBColor(0x6b, 0x6e, 0xcf),
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

/// A size in bytes as a person reads it: `100 B`, `1 KB`, `100 KB`, `1 MB`, `2.5 GB`.
pub fn bytes(v: f64) -> String {
    let units = [("GB", 1u64 << 30), ("MB", 1 << 20), ("KB", 1 << 10)];
    for (name, size) in units {
        let x = v / size as f64;
        if x >= 1.0 {
            return if x >= 10.0 || (x - x.round()).abs() < 0.05 {
                format!("{x:.0} {name}")
            } else {
                format!("{x:.1} {name}")
            };
        }
    }
    format!("{v:.0} B")
}

/// A size on an axis, narrow: `100B`, `1K`, `256K`, `1M`.
pub fn bytes_tick(v: f64) -> String {
    bytes(v)
        .replace(" KB", "K")
        .replace(" MB", "M")
        .replace(" GB", "G")
        .replace(' ', "")
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
pub fn short(v: f64) -> String {
    // `10M`, not `10.0M`.
    let trim = |t: String| match t.strip_suffix(".0") {
        Some(whole) => whole.to_string(),
        None => t,
    };
    if v >= 1e9 {
        format!("{}G", trim(format!("{:.1}", v / 1e9)))
    } else if v >= 1e6 {
        format!("{}M", trim(format!("{:.1}", v / 1e6)))
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 10.0 || v == v.round() {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Seconds as a person reads them: `3.5 ms`, `120 ms`, `2.50 s`, `15 µs`.
pub fn duration(secs: f64) -> String {
    if !secs.is_finite() {
        "-".into()
    } else if secs == 0.0 {
        "0".into()
    } else if secs >= 1.0 {
        format!("{secs:.2} s")
    } else if secs >= 1e-3 {
        let ms = secs * 1e3;
        if ms >= 10.0 {
            format!("{ms:.0} ms")
        } else {
            format!("{ms:.1} ms")
        }
    } else {
        format!("{:.0} µs", secs * 1e6)
    }
}

/// A ratio with two significant digits however small: `1.33`, `0.25`, `0.0012`.
pub fn ratio_text(r: f64) -> String {
    if !r.is_finite() {
        "-".into()
    } else if (0.995..1.0).contains(&r) {
        // Just under 1 stays under 1: a peer ahead by 0.3 % is not "1.00".
        format!("{r:.3}")
    } else if r >= 0.1 || r == 0.0 {
        format!("{r:.2}")
    } else {
        let digits = (1 - r.log10().floor() as i32).clamp(2, 9) as usize;
        format!("{r:.digits$}")
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
            Scale::Seconds => duration(v),
        }
    }

    fn tick(self, v: f64) -> String {
        match self {
            Scale::PerSecond => short(v),
            Scale::Seconds => duration(v),
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

/// Text sizes as plotters takes them (it writes a size of n as n / 1.24 SVG units; a
/// chart is drawn 860 wide and shown at about that): 15, 12 and 11 px on the page.
const TITLE_PX: u32 = 19;
const LABEL_PX: u32 = 15;
const NOTE_PX: u32 = 14;

/// Bars whose figures span more than this factor are drawn on a logarithmic axis: on a
/// linear one the smallest would be under 2 px.
const LOG_SPREAD: f64 = 150.0;

/// A horizontal bar chart, first bar on top, each bar labelled with its figure and, for
/// peers, the ratio of its time per operation to Strata's; with a dashed reference line
/// when one is given, labelled in a row of its own above the bars. Figures spanning more
/// than [`LOG_SPREAD`] are drawn on a logarithmic axis, which the axis title says.
pub fn bars(
    title: &str,
    unit: &str,
    scale: Scale,
    bars: &[Bar],
    reference: Option<&Reference>,
) -> Result<String> {
    let n = bars.len().max(1);
    // The reference line's label has the top row to itself.
    let rows = n + usize::from(reference.is_some());
    let (width, height) = (860u32, 46 + 26 * rows as u32 + 40);
    let max = axis_max(bars, reference);
    let min = bars
        .iter()
        .map(Bar::value)
        .chain(reference.map(|r| r.value))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let log = min.is_finite() && max / min > LOG_SPREAD;
    // Where a value lies along the axis: itself, or its logarithm from a decade below
    // the smallest.
    let floor = if log { min.log10().floor() } else { 0.0 };
    let at = move |v: f64| if log { v.max(1e-300).log10() } else { v };
    let xmax = if max <= 0.0 || max.is_nan() {
        1.0
    } else if log {
        // Room for the labels right of the longest bar: a bit over a third of the width.
        at(max) + (at(max) - floor) * 0.55
    } else {
        max * 1.55
    };
    let unit = if log {
        format!("{unit}, logarithmic scale")
    } else {
        unit.to_string()
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", TITLE_PX).into_font().color(&INK))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(190)
            .build_cartesian_2d(floor..xmax, (0..rows).into_segmented())
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
            .y_label_style(("sans-serif", LABEL_PX).into_font().color(&INK))
            .x_label_style(("sans-serif", LABEL_PX).into_font().color(&INK))
            .axis_desc_style(("sans-serif", LABEL_PX).into_font().color(&INK))
            // One label per bar: plotters thins labels to the hint otherwise.
            .y_labels(rows + 1)
            .x_labels(6)
            .x_label_formatter(&|x: &f64| scale.tick(if log { 10f64.powf(*x) } else { *x }))
            .x_desc(unit.as_str())
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                let color = bar_color(b)?;
                let mut r = Rectangle::new(
                    [
                        (floor, SegmentValue::Exact(seg(i))),
                        (at(b.value()).max(floor), SegmentValue::Exact(seg(i) + 1)),
                    ],
                    color.filled(),
                );
                r.set_margin(4, 4, 0, 0);
                Some(r)
            }))
            .map_err(draw_err)?;
        let left = Pos::new(HPos::Left, VPos::Center);
        let pad = (xmax - floor) * 0.01;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let at = (
                    at(b.value()).max(floor) + pad,
                    SegmentValue::CenterOf(seg(i)),
                );
                let (text, color) = bar_text(b, scale);
                Text::new(
                    text,
                    at,
                    ("sans-serif", NOTE_PX).into_font().color(&color).pos(left),
                )
            }))
            .map_err(draw_err)?;
        if let Some(r) = reference {
            let dashed = DashedLineSeries::new(
                [
                    (at(r.value), SegmentValue::Exact(0)),
                    (at(r.value), SegmentValue::Exact(n)),
                ],
                6,
                4,
                INK.stroke_width(1),
            );
            chart.draw_series(dashed).map_err(draw_err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{}: {}", r.label, scale.figure(r.value)),
                    (at(r.value), SegmentValue::CenterOf(n)),
                    ("sans-serif", NOTE_PX)
                        .into_font()
                        .color(&INK)
                        .pos(Pos::new(
                            if at(r.value) - floor > (xmax - floor) * 0.5 {
                                HPos::Right
                            } else {
                                HPos::Left
                            },
                            VPos::Center,
                        )),
                )))
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    let measured: String = bars
        .iter()
        .filter_map(|b| match b {
            Bar::Measured { engine, value, .. } if *value > 0.0 => {
                Some(format!("{engine}={value};"))
            }
            _ => None,
        })
        .collect();
    Ok(annotate(
        svg,
        &[("data-title", title), ("data-bars", &measured)],
    ))
}

/// `svg` with `attrs` on its root element: what the chart was meant to show, for the page
/// check (`tests/page_check.js`) to hold the drawing to.
fn annotate(svg: String, attrs: &[(&str, &str)]) -> String {
    let Some(rest) = svg.strip_prefix("<svg ") else {
        return svg;
    };
    let mut out = String::from("<svg ");
    for (name, value) in attrs {
        out.push_str(&format!("{name}=\"{}\" ", super::esc(value)));
    }
    out.push_str(rest);
    out
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
                t.push_str(&format!("   x{}", ratio_text(*r)));
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
    /// The engine's place among the page's engines: its colour, the same on every chart.
    pub slot: usize,
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
        x_tick: short,
        y_tick: short,
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
    /// How an x tick reads (`short` for counts, `bytes` for sizes).
    pub x_tick: fn(f64) -> String,
    /// How a y tick reads (`short` for rates, `duration` for seconds).
    pub y_tick: fn(f64) -> String,
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
    } else if lo.is_finite() {
        // One setting: a point mid-axis.
        (lo - 1.0, lo + 1.0)
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
    let log_y = ylo.is_finite() && yhi / ylo >= 100.0;
    let fy = move |y: f64| {
        if log_y {
            // A zero (a stalled second) lies on the floor.
            y.max(ylo).log10()
        } else {
            y
        }
    };
    let (ymin, ymax) = if log_y {
        (fy(ylo).floor(), fy(yhi) + 0.1)
    } else {
        (0.0, yhi.max(1e-9) * 1.12)
    };
    let mut svg = String::new();
    let plot;
    {
        let root = SVGBackend::with_string(&mut svg, (860, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        // The legend has a column of its own right of the plot, so it covers no line.
        let legend_width = lines
            .iter()
            .map(|l| l.engine.as_str())
            .chain(reference.map(|r| r.label.as_str()))
            .map(|name| name.chars().count() as u32 * 8 + 40)
            .max()
            .unwrap_or(0);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", TITLE_PX).into_font().color(&INK))
            .margin(10)
            .margin_right(10 + legend_width)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(lo..hi, ymin..ymax)
            .map_err(draw_err)?;
        let (px, py) = chart.plotting_area().get_pixel_range();
        plot = format!("{},{},{},{}", px.start, py.start, px.end, py.end);
        // The legend's column starts right of the plot.
        let (legend_x, legend_y) = (px.end + 16, py.start + 8);
        let log_x = axes.log_x;
        chart
            .configure_mesh()
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .x_desc(axes.x_desc)
            .y_desc(if log_y {
                format!("{}, logarithmic scale", axes.y_desc)
            } else {
                axes.y_desc.to_string()
            })
            .x_label_style(("sans-serif", LABEL_PX).into_font().color(&INK))
            .y_label_style(("sans-serif", LABEL_PX).into_font().color(&INK))
            .axis_desc_style(("sans-serif", LABEL_PX).into_font().color(&INK))
            // A sweep's x ticks are its measured settings, drawn below; a time series
            // keeps plotters' even seconds.
            .x_labels(if axes.time { 10 } else { 0 })
            .x_label_formatter(&|x: &f64| (axes.x_tick)(if log_x { 10f64.powf(*x) } else { *x }))
            .y_label_formatter(&|y: &f64| (axes.y_tick)(if log_y { 10f64.powf(*y) } else { *y }))
            .draw()
            .map_err(draw_err)?;
        for l in lines {
            let color = LINES[l.slot % LINES.len()];
            let points: Vec<(f64, f64)> = l.points.iter().map(|p| (fx(p.0), fy(p.1))).collect();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(draw_err)?;
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
        }
        if !axes.time {
            let mut measured: Vec<f64> = lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.0))
                .collect();
            measured.sort_by(f64::total_cmp);
            measured.dedup();
            for x in measured {
                let (tx, ty) = chart.backend_coord(&(fx(x), ymin));
                root.draw(&PathElement::new(vec![(tx, ty), (tx, ty + 5)], INK))
                    .map_err(draw_err)?;
                root.draw(&Text::new(
                    (axes.x_tick)(x),
                    (tx, ty + 8),
                    ("sans-serif", LABEL_PX)
                        .into_font()
                        .color(&INK)
                        .pos(Pos::new(HPos::Center, VPos::Top)),
                ))
                .map_err(draw_err)?;
            }
        }
        for (i, l) in lines.iter().enumerate() {
            let color = LINES[l.slot % LINES.len()];
            let (x, y) = (legend_x, legend_y + 18 * i as i32);
            root.draw(&PathElement::new(
                vec![(x, y), (x + 18, y)],
                color.stroke_width(2),
            ))
            .map_err(draw_err)?;
            root.draw(&Text::new(
                l.engine.clone(),
                (x + 24, y),
                ("sans-serif", NOTE_PX)
                    .into_font()
                    .color(&INK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(draw_err)?;
        }
        // The reference line is named in the legend, under the engines: on the plot its
        // label would lie under the lines that cross it.
        if let Some(r) = reference {
            let (x, y) = (legend_x, legend_y + 18 * lines.len() as i32 + 6);
            root.draw(&PathElement::new(vec![(x, y), (x + 5, y)], INK))
                .map_err(draw_err)?;
            root.draw(&PathElement::new(vec![(x + 9, y), (x + 14, y)], INK))
                .map_err(draw_err)?;
            for (n, text) in [
                r.label.clone(),
                format!("{} a second", (axes.y_tick)(r.value)),
            ]
            .into_iter()
            .enumerate()
            {
                root.draw(&Text::new(
                    text,
                    (x + 24, y + 16 * n as i32),
                    ("sans-serif", NOTE_PX)
                        .into_font()
                        .color(&INK)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(draw_err)?;
            }
        }
        root.present().map_err(draw_err)?;
    }
    let drawn: String = lines
        .iter()
        .map(|l| {
            let RGBColor(r, g, b) = LINES[l.slot % LINES.len()];
            let ys: Vec<String> = l.points.iter().map(|p| p.1.to_string()).collect();
            format!("{}|#{r:02X}{g:02X}{b:02X}|{};", l.engine, ys.join(","))
        })
        .collect();
    Ok(annotate(
        svg,
        &[
            ("data-title", title),
            ("data-lines", &drawn),
            ("data-plot", &plot),
        ],
    ))
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
        assert_eq!(short(10_000_000.0), "10M");
        assert_eq!(short(2_000_000_000.0), "2G");
        assert_eq!(duration(0.0035), "3.5 ms");
        assert_eq!(duration(0.121), "121 ms");
        assert_eq!(duration(2.0), "2.00 s");
        assert_eq!(duration(0.000_015), "15 µs");
        assert_eq!(bytes(100.0), "100 B");
        assert_eq!(bytes(1024.0), "1 KB");
        assert_eq!(bytes(102_400.0), "100 KB");
        assert_eq!(bytes(1_048_576.0), "1 MB");
        assert_eq!(bytes_tick(262_144.0), "256K");
        assert_eq!(ratio_text(1.333), "1.33");
        assert_eq!(ratio_text(0.0005), "0.00050");
        assert_eq!(ratio_text(0.012), "0.012");
        assert_eq!(ratio_text(0.997), "0.997");
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
                measured("strata", 0.0035, None),
                measured("leveldb", 1.31, Some(374.0)),
            ],
            None,
        )
        .unwrap();
        // Short times in milliseconds, and figures 374x apart on a logarithmic axis.
        for text in ["3.5 ms", "1.31 s", "x374.00", "logarithmic scale"] {
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
                    slot: 0,
                    points: vec![(1.0, 10.0), (2.0, 20.0)],
                },
                Line {
                    engine: "lmdb".into(),
                    slot: 1,
                    points: vec![(1.0, 15.0), (2.0, 5.0)],
                },
            ],
        )
        .unwrap();
        assert!(svg.contains("strata") && svg.contains("lmdb"));
        assert!(svg.contains("<polyline") || svg.contains("<path"));
    }
}
