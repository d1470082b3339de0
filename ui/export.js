// Download buttons under every Plotly chart: PNG and SVG at a slide-friendly size, drawn in the
// browser by the page's own Plotly (Plotly.downloadImage), so they work offline and cost the
// server nothing. The words come from lessons/site.md (window.__stepwiseWords, set by the
// frame). Charts are looked for twice a second, since Streamlit redraws them on every rerun.
// No angle brackets in this file: Streamlit's HTML sanitizer would read them as tags.
(function () {
  if (window.__stepwiseExport) return;
  window.__stepwiseExport = true;
  const WIDTH = 1600;
  const PAD = 16;
  function words() {
    return window.__stepwiseWords || { png: "PNG", svg: "SVG", help: "" };
  }
  function chartName(box) {
    for (const cls of box.classList || []) {
      if (cls.startsWith("st-key-")) return cls.slice(7);
    }
    return "stepwise-chart";
  }
  function download(box, format) {
    const gd = box.querySelector(".js-plotly-plot");
    if (!gd || !window.Plotly) return;
    const w = gd.offsetWidth || WIDTH;
    const h = gd.offsetHeight || 450;
    const height = Math.max(600, Math.round((WIDTH * h) / w));
    // a slide shows the frame on screen without the animation's controls (Play, Pause, the
    // step slider), and without the room kept for them under the plot
    const layout = Object.assign({}, gd.layout, { updatemenus: [], sliders: [] });
    const margin = Object.assign({}, gd._fullLayout.margin);
    if ((gd.layout.sliders || []).length || (gd.layout.updatemenus || []).length) {
      margin.b = Math.min(margin.b, 80);
    }
    // a slide's title off the image's top edge: PAD px more above it, and as much more room
    margin.t += PAD;
    layout.margin = margin;
    layout.title = Object.assign({}, gd.layout.title, { pad: { t: PAD } });
    window.Plotly.downloadImage({ data: gd.data, layout: layout }, {
      format: format,
      width: WIDTH,
      height: height,
      scale: format === "png" ? 2 : 1,
      filename: chartName(box),
    });
  }
  function button(box, format, label, help) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "stepwise-export-" + format;
    b.textContent = label;
    b.title = help;
    b.setAttribute("aria-label", help + " (" + label + ")");
    b.style.cssText =
      "margin-left:0.5rem;padding:0.15rem 0.7rem;font-size:0.9rem;border-radius:0.4rem;" +
      "border:1px solid #8c8c96;background:white;color:#1b1b1f;cursor:pointer";
    b.addEventListener("click", function () { download(box, format); });
    return b;
  }
  function decorate() {
    const w = words();
    for (const chart of document.querySelectorAll("[data-testid=stPlotlyChart]")) {
      const box = chart.closest("[data-testid=stElementContainer]") || chart.parentElement;
      if (!box || box.querySelector(".stepwise-export")) continue;
      const bar = document.createElement("div");
      bar.className = "stepwise-export";
      bar.style.cssText = "display:flex;justify-content:flex-end;margin-top:0.25rem";
      bar.appendChild(button(box, "png", w.png, w.help));
      bar.appendChild(button(box, "svg", w.svg, w.help));
      box.appendChild(bar);
    }
  }
  window.setInterval(decorate, 500);
  decorate();
})();
