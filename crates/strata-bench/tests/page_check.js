// The page check, run by headless Chromium on a report page (tests/pages_read.rs appends
// it to a copy of the page). It measures what the browser drew and writes every problem it
// finds, one per line, into <pre id="page-check">, which the test reads from the DOM.
//
// A chart's SVG root carries what was meant to be drawn (charts.rs, `annotate`):
//   data-title   the chart's title;
//   data-bars    a bar chart's measured bars, "engine=value;..." (values > 0 only);
//   data-lines   a line chart's lines, "engine|#rrggbb|v,v,...;..." (y values in order);
//   data-plot    the plotting area in the SVG's units, "left,top,right,bottom".
(function () {
  const problems = [];
  const say = (where, what) => problems.push(where + ": " + what);
  const svgs = Array.from(document.querySelectorAll("svg"));

  // A real engine's figure within 1,000x of the chart's largest must be at least 2 px.
  const visible = (v, max) => v > 0 && v * 1000 >= max;
  const MIN_PX = 2;
  const MIN_FONT_PX = 10;

  const titles = new Map();
  for (const svg of svgs) {
    const title = svg.getAttribute("data-title") || "(untitled chart)";
    titles.set(title, (titles.get(title) || 0) + 1);
    const scale = svg.getScreenCTM() ? svg.getScreenCTM().a : 1;
    const texts = Array.from(svg.querySelectorAll("text")).filter(
      (t) => t.textContent.trim() !== ""
    );

    // Text size on screen.
    for (const t of texts) {
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < MIN_FONT_PX) {
        say(title, `text "${t.textContent.trim()}" is ${px.toFixed(1)} px`);
      }
    }

    // No text over another, nor touching it on the same line (3 px apart at least).
    const boxes = texts.map((t) => [t, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, ra] = boxes[i];
        const [b, rb] = boxes[j];
        const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
        // Glyph boxes include the font's leading: rows of text set at their size touch.
        const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
        const slack = Math.min(ra.height, rb.height) * 0.25;
        if (w > -3 && h > slack) {
          say(
            title,
            `"${a.textContent.trim()}" and "${b.textContent.trim()}" overprint or touch`
          );
        }
      }
    }

    // A ratio that rounds to nothing says nothing.
    for (const t of texts) {
      if (/x0\.00\b/.test(t.textContent)) {
        say(title, `a ratio printed as "${t.textContent.trim()}"`);
      }
    }

    // Bars: each measured engine's bar, found on its label's row.
    const barsAttr = svg.getAttribute("data-bars");
    if (barsAttr) {
      const bars = barsAttr
        .split(";")
        .filter((s) => s)
        .map((s) => {
          const k = s.lastIndexOf("=");
          return [s.slice(0, k), parseFloat(s.slice(k + 1))];
        });
      const max = Math.max(...bars.map((b) => b[1]));
      const rects = Array.from(svg.querySelectorAll("rect")).map((r) => [
        r,
        r.getBoundingClientRect(),
      ]);
      for (const [engine, value] of bars) {
        if (!visible(value, max)) continue;
        const label = texts.find((t) => t.textContent.trim() === engine);
        if (!label) {
          say(title, `no label for ${engine}'s bar`);
          continue;
        }
        const lb = label.getBoundingClientRect();
        const cy = (lb.top + lb.bottom) / 2;
        const bar = rects.find(
          ([r, b]) =>
            r.getAttribute("fill") !== "#FFFFFF" &&
            b.top <= cy &&
            cy <= b.bottom &&
            b.left >= lb.right &&
            b.height < 40
        );
        const width = bar ? bar[1].width : 0;
        if (width < MIN_PX) {
          say(
            title,
            `${engine}'s bar (${value} against ${max}) is ${width.toFixed(1)} px`
          );
        }
      }
    }

    // Lines: each measured point at least 2 px above the plot's floor.
    const linesAttr = svg.getAttribute("data-lines");
    const plotAttr = svg.getAttribute("data-plot");
    if (linesAttr && plotAttr) {
      const [, , , bottom] = plotAttr.split(",").map(parseFloat);
      const lines = linesAttr
        .split(";")
        .filter((s) => s)
        .map((s) => {
          const [engine, color, vs] = s.split("|");
          return [engine, color.toLowerCase(), vs.split(",").map(parseFloat)];
        });
      const max = Math.max(...lines.flatMap((l) => l[2]));
      const polylines = Array.from(svg.querySelectorAll("polyline"));
      for (const [engine, color, values] of lines) {
        const line = polylines.find(
          (p) => (p.getAttribute("stroke") || "").toLowerCase() === color
        );
        if (!line) {
          if (values.some((v) => visible(v, max))) {
            say(title, `${engine}'s line is not drawn`);
          }
          continue;
        }
        const pts = line.points;
        for (let i = 0; i < values.length && i < pts.numberOfItems; i++) {
          const above = (bottom - pts.getItem(i).y) * scale;
          if (visible(values[i], max) && above < MIN_PX) {
            say(
              title,
              `${engine}'s point ${i + 1} (${values[i]} against ${max}) is ${above.toFixed(1)} px above the floor`
            );
            break;
          }
        }
      }

      // A legend over a measured point hides it.
      const legends = Array.from(svg.querySelectorAll("rect"))
        .filter((r) => (r.getAttribute("stroke") || "").toUpperCase() === "#888888")
        .map((r) => r.getBoundingClientRect());
      for (const c of svg.querySelectorAll("circle")) {
        const b = c.getBoundingClientRect();
        const [x, y] = [(b.left + b.right) / 2, (b.top + b.bottom) / 2];
        if (legends.some((l) => l.left <= x && x <= l.right && l.top <= y && y <= l.bottom)) {
          say(title, "the legend covers a measured point");
          break;
        }
      }
    }
  }

  for (const [title, n] of titles) {
    if (n > 1) say(title, `${n} charts share this title`);
  }

  // Tables fit the page.
  const width = document.documentElement.clientWidth;
  for (const table of document.querySelectorAll("table")) {
    const r = table.getBoundingClientRect();
    if (r.right > width + 0.5) {
      const head = (table.querySelector("th") || table).textContent.trim().slice(0, 40);
      say(`table "${head}"`, `${Math.round(r.width)} px wide on a ${width} px page`);
    }
  }

  const out = document.createElement("pre");
  out.id = "page-check";
  out.textContent = `charts ${svgs.length}\n` + problems.join("\n");
  document.body.appendChild(out);
})();
