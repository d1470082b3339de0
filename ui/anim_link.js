// Keeps the frame of every Plotly animation in the address bar, so a link reopens it there.
// Plotly plays frames in the browser, with no rerun, so Python never sees the frame: this
// script looks at each animated chart twice a second and writes KEY-frame=N (KEY: the chart's
// key, from Streamlit's st-key-KEY class on its container) with history.replaceState: no
// reload, no rerun. It also lets the keyboard drive the animation last pointed at or clicked:
// the right and left arrows step one frame, Space plays or pauses (keys typed into a control
// are left alone). Runs once per browser tab. No angle brackets in this file: Streamlit's
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

  let current = null; // the animated chart the keyboard drives
  function animated(node) {
    const gd = node && node.closest && node.closest(".js-plotly-plot");
    const frames = gd && gd._transitionData && gd._transitionData._frames;
    return frames && frames.length > 1 ? gd : null;
  }
  function pick(event) {
    const gd = animated(event.target);
    if (gd) current = gd;
  }
  document.addEventListener("pointerover", pick, true);
  document.addEventListener("pointerdown", pick, true);
  const still = { mode: "immediate", frame: { duration: 0, redraw: true }, transition: { duration: 0 } };
  function playing(gd) {
    const t = gd._transitionData;
    return Boolean(t && (t._animationRaf || (t._frameQueue && t._frameQueue.length)));
  }
  document.addEventListener(
    "keydown",
    function (event) {
      const typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable=true], [role=slider]");
      if (typing || !current || !document.body.contains(current) || !window.Plotly) return;
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const frames = current._transitionData._frames;
      const slider = current._fullLayout.sliders && current._fullLayout.sliders[0];
      const at = slider ? slider.active : 0;
      if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
        const step = event.key === "ArrowRight" ? 1 : -1;
        const next = Math.min(frames.length - 1, Math.max(0, at + step));
        window.Plotly.animate(current, [frames[next].name], still);
      } else if (event.key === " ") {
        if (playing(current)) {
          window.Plotly.animate(current, [null], still);
        } else {
          const from = at + 1 === frames.length ? 0 : at + 1; // at the end, play from the start
          const names = frames.slice(from).map(function (f) { return f.name; });
          window.Plotly.animate(current, names, {
            mode: "immediate",
            frame: { duration: 300, redraw: true },
            transition: { duration: 0 },
          });
        }
      } else {
        return;
      }
      event.preventDefault();
    },
    true
  );
})();
