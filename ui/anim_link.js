// Keeps the frame of every Plotly animation in the address bar, so a link reopens it there.
// Plotly plays frames in the browser, with no rerun, so Python never sees the frame: this
// script looks at each animated chart twice a second and writes KEY-frame=N (KEY: the chart's
// key, from Streamlit's st-key-KEY class on its container) with history.replaceState: no
// reload, no rerun. It also lets the keyboard drive the animation last pointed at or clicked:
// the right and left arrows step one frame (a stepper under the chart, its layout.meta.stepper,
// takes them while the chart shows the stepper's frame; once Space has played it elsewhere the
// arrows step on from where it stands, not from the stepper's step), Space plays or pauses
// (keys typed into a control are left alone); with
// none pointed at, the animation most in view. N and P scroll to the
// next and previous section heading (presenter mode's "next section"); a link with play=1
// plays the page's first animation once (ui/autoplay.py). Play goes on from the frame on
// screen, also where a chart opened at a later frame. Runs once per browser
// tab. No angle brackets in this file: Streamlit's HTML sanitizer would read them as tags.
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
  function fromHere(gd) {
    // A chart drawn at a frame other than the first (its controls' state, a link's frame, a
    // stepper's step) has not been animated there, so Plotly knows no current frame and
    // Play (fromcurrent) would start again from frame 0: tell it which frame is on screen.
    const frames = gd._transitionData && gd._transitionData._frames;
    const slider = gd._fullLayout && gd._fullLayout.sliders && gd._fullLayout.sliders[0];
    if (!frames || !(frames.length > 1) || !slider || gd._fullLayout._currentFrame) return;
    if (slider.active > 0 && frames[slider.active]) gd._fullLayout._currentFrame = frames[slider.active].name;
  }
  function everyChart() {
    sync();
    document.querySelectorAll("[data-testid=stPlotlyChart] .js-plotly-plot").forEach(fromHere);
  }
  window.setInterval(everyChart, 500);
  // Pause (or a step slider click, or Speed) interrupts a running Play: Plotly rejects the
  // interrupted animation's promise with no reason, and its own buttons do not catch it, so
  // the console showed "Uncaught (in promise) undefined" at every Pause. Such a rejection,
  // right after a press on an animation's controls, is expected: keep it off the console.
  let pressedAt = -Infinity;
  document.addEventListener(
    "pointerdown",
    function (event) {
      const on = event.target.closest && event.target.closest(".js-plotly-plot");
      if (on) {
        pressedAt = Date.now();
        fromHere(on);
      }
    },
    true
  );
  window.addEventListener("unhandledrejection", function (event) {
    if (event.reason === undefined && 10000 > Date.now() - pressedAt) event.preventDefault();
  });

  let current = null; // the animated chart the keyboard drives
  function animated(node) {
    const gd = node && node.closest && node.closest(".js-plotly-plot");
    const frames = gd && gd._transitionData && gd._transitionData._frames;
    return frames && frames.length > 1 ? gd : null;
  }
  function pick(event) {
    const gd = animated(event.target);
    if (!gd) return;
    current = gd;
    // Plotly's drag layer keeps a click from focusing the page; embedded in another site's
    // iframe, the keys would then go to that site: a click on the chart takes the focus
    if (event.type === "pointerdown" && window !== window.top) window.focus();
  }
  document.addEventListener("pointerover", pick, true);
  document.addEventListener("pointerdown", pick, true);
  const still = { mode: "immediate", frame: { duration: 0, redraw: true }, transition: { duration: 0 } };
  function animate(gd, names, options) {
    // Plotly rejects the promise of an animation that another one interrupts (Space pausing
    // a play, an arrow during one): expected here, so it must not reach the console
    const done = window.Plotly.animate(gd, names, options);
    if (done && done.catch) done.catch(function () {});
  }
  function playing(gd) {
    // frames still waiting to be shown; a one-frame step that is just finishing (its drawing
    // loop not yet stopped) is not playing, so Space right after an arrow plays
    const t = gd._transitionData;
    return Boolean(t && t._frameQueue && t._frameQueue.length);
  }
  function play(gd, from, to) {
    const frames = gd._transitionData._frames;
    const names = frames.slice(from, to ?? frames.length).map(function (f) { return f.name; });
    animate(gd, names, {
      mode: "immediate",
      frame: { duration: 300, redraw: true },
      transition: { duration: 0 },
    });
  }
  // A link with play=1 (ui/autoplay.py) marks the page's animations with a token: the first
  // one drawn with a token comes into view and plays from its first frame (to the end, or
  // under a stepper to the stepper's step), once. Once it has stopped (at its end, or paused)
  // it is done; if Streamlit draws the chart anew while it plays (Plotly's animation state is
  // then a new object), it starts again, at most 3 times. A click or a key of the viewer's
  // ends it too: from then on what plays is theirs.
  const autoplays = new Map(); // token: { done, tries, at, state }
  function stopReplaced() {
    // Plotly.react with frames (Streamlit redrawing a chart, e.g. at a resize) gives the chart
    // a new animation state without stopping a play running on the old one, which then goes
    // on drawing old frames and, once the chart is removed, throws "Cannot set properties of
    // undefined (setting '_currentFrame')" at every frame it had left: stop that play.
    const P = window.Plotly;
    if (P.__stepwiseReact) return;
    P.__stepwiseReact = true;
    const react = P.react;
    P.react = function (gd) {
      const old = gd && gd._transitionData;
      const done = react.apply(this, arguments);
      if (old && old !== gd._transitionData && old._animationRaf) {
        window.cancelAnimationFrame(old._animationRaf);
        old._animationRaf = null;
        if (old._frameQueue) old._frameQueue.length = 0;
      }
      return done;
    };
  }
  function autoplay() {
    if (!window.Plotly) return;
    stopReplaced();
    for (const gd of document.querySelectorAll("[data-testid=stPlotlyChart] .js-plotly-plot")) {
      const token = gd.layout && gd.layout.meta && gd.layout.meta.play;
      if (!token || !animated(gd) || !gd._fullLayout.sliders) continue;
      if (!autoplays.has(token)) autoplays.set(token, { done: false, tries: 0, at: 0, state: null });
      const a = autoplays.get(token);
      if (a.done || a.tries >= 3 || playing(gd) || 1500 > Date.now() - a.at) return;
      if (a.state && gd._transitionData === a.state) {
        a.done = true; // it played and stopped
        return;
      }
      a.tries += 1;
      a.at = Date.now();
      current = gd;
      intoView(gd);
      const meta = gd.layout.meta;
      play(gd, 0, meta.stepper != null ? meta.start + 1 : undefined);
      a.state = gd._transitionData;
      return;
    }
  }
  function intoView(gd) {
    // centred when it fits below Streamlit's header, else its top (title) just below it
    const header = document.querySelector("[data-testid=stHeader]");
    const top = header ? header.getBoundingClientRect().bottom : 0;
    const tall = gd.getBoundingClientRect().height + 16 > window.innerHeight - top;
    gd.style.scrollMarginTop = top + 8 + "px";
    gd.scrollIntoView({ block: tall ? "start" : "center" });
  }
  window.setInterval(autoplay, 250);
  function takenOver() {
    // a click or a key from the viewer: what plays is theirs from now on
    autoplays.forEach(function (a) { a.done = true; });
  }
  document.addEventListener("pointerdown", takenOver, true);
  document.addEventListener("keydown", takenOver, true);
  function onScreen() {
    // the animated chart with the most of itself inside the window (none pointed at yet)
    let best = null;
    let most = 0;
    for (const gd of document.querySelectorAll("[data-testid=stPlotlyChart] .js-plotly-plot")) {
      if (!animated(gd)) continue;
      const r = gd.getBoundingClientRect();
      const seen = Math.min(r.bottom, window.innerHeight) - Math.max(r.top, 0);
      if (seen > most) {
        most = seen;
        best = gd;
      }
    }
    return best;
  }
  function toSection(step) {
    // N and P: bring the next (or previous) heading of the page to the top of the window
    const heads = Array.from(document.querySelectorAll("[data-testid=stMain] h1, [data-testid=stMain] h2, [data-testid=stMain] h3"));
    const header = document.querySelector("[data-testid=stHeader]");
    const line = (header ? header.getBoundingClientRect().bottom : 0) + 8; // a heading lands below it
    const tops = heads.map(function (h) { return h.getBoundingClientRect().top; });
    let i = -1;
    if (step > 0) i = tops.findIndex(function (t) { return t > line; });
    else i = tops.findLastIndex(function (t) { return line - 24 > t; });
    if (i >= 0) heads[i].scrollIntoView({ block: "start" });
  }
  // A toggle or a radio choice clicked takes the focus (Streamlit's switches focus their input
  // after the click, with no change event), and its keys are not the page's: Space on a focused
  // switch switches it again (the presenter toggle went off at the Space meant to play). A click
  // on one hands the keys back to the page; a control reached with Tab keeps the focus, for the
  // keyboard's own use (and the keys below still pass it N, P and, presenting, Space).
  let clickedAt = -Infinity;
  document.addEventListener("pointerdown", function () { clickedAt = Date.now(); }, true);
  document.addEventListener(
    "focusin",
    function (event) {
      const box = event.target;
      if (!box.matches || !box.matches("input[type=checkbox], input[type=radio]")) return;
      if (1000 > Date.now() - clickedAt) {
        window.setTimeout(function () { if (document.activeElement === box) box.blur(); }, 0);
      }
    },
    true
  );
  function presenting() {
    return new URL(window.location.href).searchParams.get("present") === "1";
  }
  // Which keys a focused control keeps: what is typed into a field, all of them; a slider (a
  // range input, Streamlit's sliders) its arrows and the like, so it still moves, but not N, P
  // and Space; a radio its arrows and Space. A switch (a toggle, a checkbox) keeps Space except
  // while presenting, where Space plays and Enter switches it.
  const SLIDER_KEYS = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"];
  function keptBy(control, event) {
    if (!control) return false;
    const type = control.tagName === "INPUT" ? control.type : "";
    if (type === "range" || control.getAttribute("role") === "slider") return SLIDER_KEYS.includes(event.key);
    if (type === "radio") return SLIDER_KEYS.includes(event.key) || event.key === " ";
    if (type === "checkbox") return event.key === " " && !presenting();
    return true;
  }
  document.addEventListener(
    "keydown",
    function (event) {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const control = event.target.closest && event.target.closest("input, textarea, select, [contenteditable=true], [role=slider]");
      if (keptBy(control, event)) return;
      if (control && control.type === "checkbox" && event.key === "Enter" && presenting()) {
        control.click(); // presenting, Enter switches a focused toggle (Space plays)
        event.preventDefault();
        return;
      }
      const letter = event.key.length === 1 ? event.key.toLowerCase() : ""; // N as n (Shift, Caps Lock)
      if (letter === "n" || letter === "p") {
        toSection(letter === "n" ? 1 : -1);
        event.preventDefault();
        return;
      }
      if (!current || !document.body.contains(current)) current = onScreen();
      if (!current || !window.Plotly) return;
      const frames = current._transitionData._frames;
      const slider = current._fullLayout.sliders && current._fullLayout.sliders[0];
      const at = slider ? slider.active : 0;
      const stepped = current.layout.meta && current.layout.meta.stepper != null;
      if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
        const own = !stepped || at !== current.layout.meta.start || playing(current);
        if (!own) return; // the stepper's Previous and Next take the arrows
        const step = event.key === "ArrowRight" ? 1 : -1;
        const next = Math.min(frames.length - 1, Math.max(0, at + step));
        animate(current, [frames[next].name], still);
        event.stopImmediatePropagation(); // not the stepper's shortcut too
      } else if (event.key === " ") {
        if (playing(current)) {
          animate(current, [null], still);
        } else {
          play(current, at + 1 === frames.length ? 0 : at + 1); // at the end, from the start
        }
      } else {
        return;
      }
      event.preventDefault();
    },
    true
  );
})();
