// Keeps the frame of every Plotly animation in the address bar, so a link reopens it there.
// Plotly plays frames in the browser, with no rerun, so Python never sees the frame: this
// script looks at each animated chart twice a second and writes KEY-frame=N (KEY: the chart's
// key, from Streamlit's st-key-KEY class on its container) with history.replaceState: no
// reload, no rerun. Runs once per browser tab. No angle brackets in this file: Streamlit's
// HTML sanitizer would read them as tags.
(function () {
  if (window.__stepwiseFrames) return;
  window.__stepwiseFrames = true;
  function chartKey(gd) {
    let node = gd;
    while (node && node !== document.body) {
      for (const cls of node.classList || []) {
        if (cls.startsWith("st-key-")) return cls.slice(7);
      }
      node = node.parentElement;
    }
    return null;
  }
  function sync() {
    const url = new URL(window.location.href);
    let changed = false;
    for (const gd of document.querySelectorAll("[data-testid=stPlotlyChart] .js-plotly-plot")) {
      const frames = gd._transitionData && gd._transitionData._frames;
      const slider = gd._fullLayout && gd._fullLayout.sliders && gd._fullLayout.sliders[0];
      const key = chartKey(gd);
      if (!key || !frames || !(frames.length > 1) || !slider) continue;
      const param = key + "-frame";
      const active = String(slider.active);
      const start = String((gd.layout.meta && gd.layout.meta.start) ?? "");
      const want = active === start ? null : active;
      if (want === null && url.searchParams.has(param)) {
        url.searchParams.delete(param);
        changed = true;
      } else if (want !== null && url.searchParams.get(param) !== want) {
        url.searchParams.set(param, want);
        changed = true;
      }
    }
    if (changed) window.history.replaceState(window.history.state, "", url);
  }
  window.setInterval(sync, 500);
})();
