// Timer of active seconds, slider read-outs, keyboard shortcuts, one submission per click.
(function () {
  "use strict";
  var form = document.getElementById("judge-form");
  if (!form) { return; }
  var timer = document.getElementById("timer");
  var field = document.getElementById("active_s");
  var active = (field && Number(field.value)) || 0, last = Date.now();  // kept across a reveal
  function tick() {
    var now = Date.now();
    if (document.visibilityState === "visible") { active += (now - last) / 1000; }
    last = now;
    var s = Math.floor(active);
    if (timer) { timer.textContent = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); }
    if (field) { field.value = active.toFixed(1); }
  }
  setInterval(tick, 1000);
  tick();  // show the kept count at once
  document.addEventListener("visibilitychange", function () { last = Date.now(); });

  // A question waits for the debaters' answer: report the clock and ask whether the answer
  // has come; reload the page (the clock kept by the server) when it has.
  var waiting = document.getElementById("waiting");
  if (waiting && waiting.dataset.wait && window.fetch) {
    var csrf = form.querySelector('input[name="csrf"]');
    var poll = function () {
      tick();
      var body = new URLSearchParams();
      body.set("csrf", csrf ? csrf.value : "");
      body.set("active_s", field ? field.value : "");
      fetch(waiting.dataset.wait, {method: "POST", body: body, credentials: "same-origin"})
        .then(function (r) { return r.ok ? r.json() : {pending: true}; })
        .then(function (state) {
          if (state.pending === false) { window.location.reload(); } else { setTimeout(poll, 2000); }
        })
        .catch(function () { setTimeout(poll, 5000); });
    };
    setTimeout(poll, 2000);
  }

  var p = document.getElementById("p"), pout = document.getElementById("p-out");
  function showP() {
    if (p && pout) { pout.textContent = "Answer 1: " + p.value + " % · Answer 2: " + (100 - p.value) + " %"; }
  }
  if (p) { p.addEventListener("input", showP); showP(); }
  var q = document.getElementById("probability"), qout = document.getElementById("probability-out");
  var useq = document.getElementById("use_probability");
  if (q) {
    q.addEventListener("input", function () {
      qout.textContent = q.value + " %";
      if (useq) { useq.checked = true; }
    });
  }

  var sent = false;
  form.addEventListener("submit", function (ev) {
    tick();
    if (sent) { ev.preventDefault(); return; }
    sent = true;
    var b = document.getElementById("submit");
    if (b) { b.disabled = true; b.textContent = "Sending…"; }
  });

  document.addEventListener("keydown", function (ev) {
    var typing = ev.target && (ev.target.tagName === "TEXTAREA" || ev.target.tagName === "INPUT" && ev.target.type === "text");
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); form.requestSubmit(); return; }
    if (typing) { return; }
    var reveal = document.getElementById("reveal");
    if (reveal && ev.key.toLowerCase() === "n") { ev.preventDefault(); form.requestSubmit(reveal); return; }
    if (form.dataset.kind === "leaf") {
      var k = ev.key.toLowerCase();
      var v = k === "t" ? "1" : k === "f" ? "0" : null;
      if (v !== null) {
        var r = form.querySelector('input[name="verdict"][value="' + v + '"]');
        if (r) { r.checked = true; r.focus(); }
      }
    } else if (p && (ev.key === "ArrowLeft" || ev.key === "ArrowRight") && ev.target !== p) {
      ev.preventDefault();
      var step = ev.key === "ArrowLeft" ? 5 : -5;  // left: towards answer 1
      p.value = Math.max(1, Math.min(99, Number(p.value) + step));
      showP();
    }
  });
}());
