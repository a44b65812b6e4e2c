// Live activations, on an app's page and on an activation's page.
//
// An activate form posts its JSON input to the API (the session cookie,
// same origin: the API's CSRF rule lets it through), then follows the new
// activation's Server-Sent Events stream: the LLM's tokens as they arrive
// (event: token), then the final record (event: activation). The stream
// starts with every token so far, so opening it after the POST loses
// nothing. The result shows under the form and in the history table, with
// no reload.
//
// The events WebSocket keeps every status on the page current, whoever
// started the activation (this page, another tab, a program): created
// ones join the history, started ones show running, and an ended one not
// followed by a stream is read again for its record (the event has no
// duration). Cancel buttons post the cancel and show the record it
// answers. Everything shown is set as text, never as HTML, except the
// server's own fragments below (html/template escaped them).
//
// A run that calls tools shows its steps, and what it waits for with
// Approve, Edit and Reject: those parts are fragments the server renders
// (…/run on an activation's page, …/waiting on an app's), fetched again
// whenever a step ends or the run starts to wait. An answer posts to the
// API's waitpoint, as every change goes through the API.
"use strict";
(function () {
  var AP = window.AP;
  if (!AP) return;
  var el = AP.el, statusEl = AP.statusEl, timeEl = AP.timeEl, duration = AP.duration, clip = AP.clip;

  var ENDED = { completed: true, failed: true };

  // setStatus shows status in place of the status in container; an ended
  // status stays (a late "started" event must not undo a final record).
  function setStatus(container, status) {
    var cur = container && container.querySelector(".status");
    if (!cur) return;
    if (ENDED[cur.textContent] && !ENDED[status]) return;
    cur.replaceWith(statusEl(status));
  }

  // shownStatus is the status pages show: waiting while a running
  // activation waits.
  function shownStatus(act) { return act.status === "running" && act.waiting ? "waiting" : act.status; }

  function responseOf(output) {
    return output && typeof output === "object" && typeof output.response === "string" ? output.response : null;
  }
  function preview(act) {
    if (act.error) return clip(act.error);
    var text = responseOf(act.output_data);
    if (text) return clip(text);
    if (act.output_data === null || act.output_data === undefined) return "";
    return clip(JSON.stringify(act.output_data));
  }
  function pretty(v) { return JSON.stringify(v, null, 2); }
  function activationURL(appID, id) {
    return "/apps/" + encodeURIComponent(appID) + "/activations/" + encodeURIComponent(id);
  }
  function getActivation(id) {
    return AP.api("GET", "/api/v1/activations/" + encodeURIComponent(id));
  }

  // A view shows an activation: update(record) with a full record,
  // status(s) on a status event, token(delta) as the LLM answers.

  // Streams: the activations this page follows token by token, and the
  // views each one feeds.
  var streams = {}; // activation id → {es, views}

  function follow(id, views) {
    var s = streams[id];
    if (s) {
      s.views = s.views.concat(views);
      return;
    }
    s = streams[id] = { views: views, es: null };
    open(id, s);
  }
  function open(id, s) {
    var es = new EventSource("/api/v1/activations/" + encodeURIComponent(id) + "/stream");
    s.es = es;
    es.addEventListener("token", function (ev) {
      var delta;
      try { delta = JSON.parse(ev.data).delta; } catch (e) { return; }
      s.views.forEach(function (v) { if (v.token) v.token(delta); });
    });
    es.addEventListener("activation", function (ev) {
      var act;
      try { act = JSON.parse(ev.data); } catch (e) { return; }
      finish(act);
    });
    es.addEventListener("error", function () {
      // EventSource reconnects by itself (with Last-Event-ID) after a
      // dropped connection. A refused one (e.g. too many connections) is
      // CLOSED: read the record instead, and try the stream again later
      // while it runs.
      if (es.readyState !== EventSource.CLOSED || streams[id] !== s) return;
      getActivation(id).then(function (r) {
        if (streams[id] !== s) return;
        if (r.ok && ENDED[r.data.status]) { finish(r.data); return; }
        if (!r.ok && r.status >= 400 && r.status < 500 && r.status !== 429) {
          delete streams[id]; // gone, or no longer ours to see
          return;
        }
        if (r.ok) s.views.forEach(function (v) { v.update(r.data); });
        setTimeout(function () { if (streams[id] === s) open(id, s); }, 2000);
      });
    });
  }
  // finish shows an activation's final record and stops its stream.
  function finish(act) {
    var s = streams[act.activation_id];
    if (s) {
      delete streams[act.activation_id];
      if (s.es) s.es.close();
    }
    viewsOf(act.activation_id, s).forEach(function (v) { v.update(act); });
  }
  // show gives a record (a cancel's answer, a re-read) to its views.
  function show(act) {
    if (ENDED[act.status]) { finish(act); return; }
    viewsOf(act.activation_id, streams[act.activation_id]).forEach(function (v) { v.update(act); });
  }
  // viewsOf are the views of an activation: its stream's, or else its
  // history row and its page.
  function viewsOf(id, s) {
    if (s) return s.views;
    var views = [rowView(id)];
    if (detail && detail.dataset.activation === id) views.push(detailView());
    return views;
  }
  window.addEventListener("pagehide", function () {
    Object.keys(streams).forEach(function (id) { if (streams[id].es) streams[id].es.close(); });
    if (socket) {
      var ws = socket;
      socket = null; // no reconnect
      ws.close();
    }
  });

  // The events WebSocket: statuses of the activations the query selects
  // (app_id=…, activation_id=…).
  var socket = null;
  // since is the last event seq the page was rendered after: the first
  // connection asks for what came since, so nothing between the page's
  // rendering and the socket's opening is missed.
  function listen(query, since) {
    since = since === undefined || since === "" ? -1 : Number(since);
    var tries = 0;
    var replayed = false; // the first connection fetched the live parts
    function connect() {
      var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/v1/ws?" + query;
      if (since >= 0) url += "&since=" + since;
      var ws = new WebSocket(url);
      socket = ws;
      ws.addEventListener("open", function () {
        tries = 0;
        // What changed between the page's rendering and this first
        // connection came as no event: fetch the live parts again.
        if (!replayed) reloadLive();
        replayed = true;
      });
      ws.addEventListener("message", function (m) {
        var ev;
        try { ev = JSON.parse(m.data); } catch (e) { return; }
        if (typeof ev.seq === "number" && ev.seq > since) since = ev.seq;
        if (ev.activation_id) onEvent(ev);
      });
      ws.addEventListener("close", function () {
        // Reconnect (with ?since=, to miss nothing) a few times: the
        // server restarted, or this client fell behind.
        if (socket !== ws || tries >= 5) return;
        tries++;
        setTimeout(connect, 1000 * tries);
      });
    }
    connect();
  }
  function onEvent(ev) {
    var id = ev.activation_id;
    switch (ev.type) {
      case "activation_created":
        addRow({ activation_id: id, agent_id: ev.agent_id, status: ev.status, created_at: ev.timestamp });
        break;
      case "activation_started":
        viewsOf(id, streams[id]).forEach(function (v) { v.status("running"); });
        break;
      case "activation_completed":
      case "activation_failed":
        reloadLive();
        // A stream brings its own final record.
        if (streams[id]) return;
        // A stream opened while this read was on its way (the page posted
        // the activation and follows it) brings the tokens and then the
        // record: finishing now would close it before its tokens.
        getActivation(id).then(function (r) { if (r.ok && !streams[id]) show(r.data); });
        break;
      case "activation_waiting":
        viewsOf(id, streams[id]).forEach(function (v) { v.status("waiting"); });
        reloadLive();
        break;
      case "activation_step":
        var step = null;
        try { step = typeof ev.step === "string" ? JSON.parse(ev.step) : ev.step; } catch (e) { step = null; }
        // A wait that ended: the run goes on.
        if (step && step.kind === "wait") viewsOf(id, streams[id]).forEach(function (v) { v.status("running"); });
        reloadLive();
        break;
    }
  }

  // The server's fragments: the run on an activation's page, the waiting
  // list on an app's. reload fetches one again (one fetch at a time, and
  // one more if asked meanwhile) and puts it in place when it changed,
  // keeping any answer form that is still the same wait (what a person is
  // typing stays). rendered is what each shows, as it came (local times
  // in): an event that changed nothing there changes nothing on screen.
  var rendered = {};
  ["[data-run]", "[data-waitlist]"].forEach(function (sel) {
    var box = document.querySelector(sel);
    if (box) rendered[sel] = box.outerHTML;
  });
  function reload(sel) {
    var box = document.querySelector(sel);
    if (!box) return;
    var state = box.reloading;
    if (state) { state.again = true; return; }
    state = box.reloading = { again: false };
    fetch(box.dataset.src, { credentials: "same-origin", headers: { Accept: "text/html" } }).then(function (res) {
      return res.ok ? res.text() : null;
    }, function () { return null; }).then(function (html) {
      box.reloading = null;
      if (html !== null) {
        var t = document.createElement("template");
        t.innerHTML = html;
        var fresh = t.content.querySelector(sel);
        if (fresh) AP.localTimes(fresh);
        if (fresh && fresh.outerHTML !== rendered[sel]) {
          rendered[sel] = fresh.outerHTML;
          fresh.querySelectorAll("form[data-wait-form]").forEach(function (f) {
            var old = box.querySelector('form[data-wait-form][data-waitpoint-id="' + CSS.escape(f.dataset.waitpointId) + '"]');
            if (old) f.replaceWith(old);
          });
          box.replaceWith(fresh);
          box = fresh;
          reloaded(fresh);
        }
      }
      if (state.again) reload(sel);
    });
  }
  // reloaded shows the statuses a fresh fragment tells: which
  // activations wait, and, on an activation's page, whether it does.
  function reloaded(fresh) {
    fresh.querySelectorAll("li[data-waiting]").forEach(function (li) {
      rowView(li.dataset.waiting).status("waiting");
    });
    if (fresh.matches("[data-run]") && detail) {
      var waits = !!fresh.querySelector("section.waiting");
      var cur = field("status").textContent;
      if (waits) detailView().status("waiting");
      else if (cur === "waiting") detailView().status("running");
    }
  }
  function reloadLive() {
    reload("[data-run]");
    reload("[data-waitlist]");
  }

  // Answer forms: each pending call gets a decision (Approve at once; Edit
  // and Reject open their field first); when every call of the wait has
  // one, the answer posts to the API.
  function decisionOf(call, type) {
    var d = { tool_call_id: call.dataset.call, type: type };
    if (type === "edit") {
      var text = call.querySelector('[name="arguments"]');
      var args;
      try {
        args = JSON.parse(text.value);
      } catch (e) {
        AP.showError(call, "arguments", "This is not valid JSON: " + e.message);
        return null;
      }
      if (args === null || typeof args !== "object" || Array.isArray(args)) {
        AP.showError(call, "arguments", "The arguments must be a JSON object.");
        return null;
      }
      d.arguments = args;
    }
    if (type === "reject") {
      var msg = call.querySelector('[name="message"]').value.trim();
      if (msg) d.message = msg;
    }
    return d;
  }
  var DECIDED = { approve: "Approved", edit: "Edited", reject: "Rejected" };
  function setDecided(call, d) {
    call.decision = d;
    call.querySelector("[data-choices]").hidden = !!d;
    call.querySelectorAll("[data-panel]").forEach(function (p) { p.hidden = true; });
    call.querySelectorAll("[data-open]").forEach(function (b) { b.setAttribute("aria-expanded", "false"); });
    var note = call.querySelector("[data-decided]");
    note.hidden = !d;
    if (!d) { note.replaceChildren(); return; }
    var change = el("button", "link-button", "Change");
    change.type = "button";
    change.dataset.undecide = "";
    note.replaceChildren(DECIDED[d.type] + ". ", change);
  }
  function send(form) {
    var calls = Array.prototype.slice.call(form.querySelectorAll("fieldset[data-call]"));
    if (calls.some(function (c) { return !c.decision; })) return;
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    var slot = form.querySelector('[data-error-for=""]');
    slot.textContent = "";
    var url = "/api/v1/activations/" + encodeURIComponent(form.dataset.activationId) + "/waitpoints/" + encodeURIComponent(form.dataset.waitpointId);
    var body = JSON.stringify({ decisions: calls.map(function (c) { return c.decision; }) });
    form.setAttribute("aria-busy", "true");
    AP.api("POST", url, body).then(function (r) {
      form.setAttribute("aria-busy", "false");
      if (r.ok || r.status === 409) {
        var done = el("p", "notice", r.ok ? "Answer sent: the run goes on." : "This wait has been answered already.");
        done.setAttribute("role", "status");
        form.replaceChildren(done);
        if (r.ok) show(r.data);
        reloadLive();
        return;
      }
      buttons.forEach(function (b) { b.disabled = false; });
      calls.forEach(function (c) { setDecided(c, null); });
      AP.showError(form, "", "Could not send the answer: " + r.data.detail);
    });
  }
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest("form[data-wait-form] button");
    if (!button) return;
    var form = button.closest("form");
    var call = button.closest("fieldset[data-call]");
    if (!call) return;
    AP.clearErrors(call);
    if (button.dataset.open) {
      var open = button.getAttribute("aria-expanded") !== "true";
      call.querySelectorAll("[data-open]").forEach(function (b) { b.setAttribute("aria-expanded", "false"); });
      call.querySelectorAll("[data-panel]").forEach(function (p) { p.hidden = true; });
      button.setAttribute("aria-expanded", String(open));
      var panel = call.querySelector('[data-panel="' + button.dataset.open + '"]');
      panel.hidden = !open;
      if (open) panel.querySelector("textarea, input").focus();
      return;
    }
    if (button.hasAttribute("data-undecide")) {
      setDecided(call, null);
      return;
    }
    var d = decisionOf(call, button.dataset.decide);
    if (!d) return;
    setDecided(call, d);
    send(form);
  });

  // The history table of an app's page.

  var table = document.querySelector('table[data-list="activations"]');
  var emptyHistory = document.querySelector('[data-empty="activations"]');
  // agentNames are the app's agents, from their forms.
  var agentNames = {};
  document.querySelectorAll("form[data-activate-form]").forEach(function (f) {
    agentNames[f.dataset.agentId] = f.dataset.agentName;
  });

  function rowOf(id) {
    return table && table.querySelector('tr[data-activation-id="' + CSS.escape(id) + '"]');
  }
  function cancelButton(id, agentName) {
    var b = el("button", "danger", "Cancel");
    b.type = "button";
    b.dataset.cancel = id;
    b.setAttribute("aria-label", "Cancel the activation of " + agentName);
    return b;
  }
  // addRow puts a new activation first in the history (on its first page
  // only: an older page keeps its rows).
  function addRow(act) {
    if (!table || table.dataset.offset !== "0" || rowOf(act.activation_id)) return;
    var appID = table.dataset.appId;
    var name = agentNames[act.agent_id] || act.agent_id;
    var tr = document.createElement("tr");
    tr.dataset.activationId = act.activation_id;
    function td(label, cellName, content) {
      var c = el("td");
      if (label) c.setAttribute("data-label", label);
      if (cellName) c.dataset.cell = cellName;
      if (content) c.append(content);
      return c;
    }
    var agent = el("a", "", name);
    agent.href = "/apps/" + encodeURIComponent(appID) + "#agent-" + encodeURIComponent(act.agent_id);
    var details = el("a", "", "Details");
    details.href = activationURL(appID, act.activation_id);
    var actions = td("", "actions", details);
    actions.className = "actions";
    if (!ENDED[act.status]) actions.append(" ", cancelButton(act.activation_id, name));
    var prev = td("Output", "preview");
    prev.className = "preview";
    tr.append(td("Status", "status", statusEl(act.status)), td("Agent", "", agent),
      td("Created", "", timeEl(act.created_at)), td("Duration", "duration", el("span", "muted", "—")), prev, actions);
    table.querySelector("tbody").prepend(tr);
    AP.localTimes(tr);
    table.hidden = false;
    if (emptyHistory) emptyHistory.hidden = true;
  }
  function rowView(id) {
    return {
      status: function (s) { setStatus(rowOf(id), s); },
      update: function (act) {
        var tr = rowOf(id);
        if (!tr) return;
        tr.querySelector('[data-cell="status"]').replaceChildren(statusEl(shownStatus(act)));
        var d = duration(act.duration_ms);
        tr.querySelector('[data-cell="duration"]').replaceChildren(d ? d : el("span", "muted", "—"));
        var prev = tr.querySelector('[data-cell="preview"]');
        prev.textContent = preview(act);
        prev.classList.toggle("failed", !!act.error);
        if (ENDED[act.status]) {
          var b = tr.querySelector("button[data-cancel]");
          if (b) b.remove();
        }
      }
    };
  }

  // The result under an activate form.
  function resultView(form, appID) {
    var box = form.parentElement.querySelector("[data-result]");
    var meta = box.querySelector("[data-result-meta]");
    var out = box.querySelector("[data-result-output]");
    var err = box.querySelector("[data-result-error]");
    var streamed = "";
    var id = "";
    function setMeta(act) {
      var link = el("a", "", "Details");
      link.href = activationURL(appID, act.activation_id);
      link.setAttribute("aria-label", "Details of this activation");
      var parts = [statusEl(shownStatus(act))];
      var d = duration(act.duration_ms);
      if (d) parts.push(" · " + d);
      parts.push(" · ", link);
      if (!ENDED[act.status]) parts.push(" ", cancelButton(act.activation_id, form.dataset.agentName));
      meta.replaceChildren.apply(meta, parts);
    }
    return {
      start: function (act) {
        id = act.activation_id;
        streamed = "";
        box.hidden = false;
        box.setAttribute("aria-busy", "true");
        setMeta(act);
        out.replaceChildren(el("span", "muted", "Waiting for the agent…"));
        out.hidden = false;
        err.textContent = "";
      },
      status: function (s) { setStatus(meta, s); },
      token: function (delta) {
        streamed += delta;
        out.textContent = streamed;
        setStatus(meta, "running");
      },
      update: function (act) {
        if (act.activation_id !== id) return;
        setMeta(act);
        if (!ENDED[act.status]) return;
        box.setAttribute("aria-busy", "false");
        var text = responseOf(act.output_data);
        if (text !== null) out.textContent = text;
        else if (act.output_data !== null && act.output_data !== undefined) out.textContent = pretty(act.output_data);
        else out.textContent = streamed;
        out.hidden = !out.textContent;
        err.textContent = act.error || "";
      }
    };
  }

  function activateForm(form) {
    var text = form.querySelector("textarea");
    var appID = form.dataset.appId;
    var result = resultView(form, appID);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      AP.clearErrors(form);
      var input;
      try {
        input = JSON.parse(text.value);
      } catch (e) {
        AP.showError(form, "input_data", "This is not valid JSON: " + e.message);
        return;
      }
      if (input === null || typeof input !== "object" || Array.isArray(input)) {
        AP.showError(form, "input_data", 'The input must be a JSON object, e.g. {"prompt": "Hello"}.');
        return;
      }
      AP.busy(form, true);
      var url = "/api/v1/apps/" + encodeURIComponent(appID) + "/agents/" + encodeURIComponent(form.dataset.agentId) + "/activate";
      AP.api("POST", url, JSON.stringify({ input_data: input })).then(function (r) {
        AP.busy(form, false);
        if (!r.ok) {
          AP.showError(form, AP.fieldOf(form, r.data) || (r.status === 400 ? "input_data" : ""), r.data.detail);
          return;
        }
        var act = r.data;
        result.start(act);
        addRow(act);
        follow(act.activation_id, [result, rowView(act.activation_id)]);
      });
    });
  }

  // Cancel buttons, wherever they are (history rows, results, an
  // activation's page).
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest("button[data-cancel]");
    if (!button) return;
    var id = button.dataset.cancel;
    button.disabled = true;
    button.textContent = "Cancelling…";
    AP.api("POST", "/api/v1/activations/" + encodeURIComponent(id) + "/cancel").then(function (r) {
      if (r.ok) { show(r.data); return; }
      if (r.status === 409) {
        // It ended meanwhile: show how.
        getActivation(id).then(function (g) { if (g.ok) show(g.data); });
        return;
      }
      button.disabled = false;
      button.textContent = "Cancel";
      var slot = document.querySelector("[data-cancel-error]");
      if (slot) {
        slot.textContent = "Could not cancel: " + r.data.detail;
        slot.setAttribute("tabindex", "-1");
        slot.focus();
      }
    });
  });

  // An activation's page: its fields follow the record while it runs.
  var detail = document.querySelector("[data-activation][data-status]");
  var detailViewCache = null;
  function field(name) { return document.querySelector('[data-field="' + name + '"]'); }
  function detailView() {
    if (detailViewCache) return detailViewCache;
    var streamed = "";
    var output = field("output");
    var noOutput = document.querySelector('[data-empty="output"]');
    detailViewCache = {
      status: function (s) { setStatus(field("status"), s); },
      token: function (delta) {
        streamed += delta;
        output.textContent = streamed;
        output.hidden = false;
        noOutput.hidden = true;
        setStatus(field("status"), "running");
      },
      update: function (act) {
        field("status").replaceChildren(statusEl(shownStatus(act)));
        if (act.started_at) field("started").replaceChildren(timeEl(act.started_at));
        if (act.completed_at) field("ended").replaceChildren(timeEl(act.completed_at));
        var d = duration(act.duration_ms);
        if (d) field("duration").textContent = d;
        AP.localTimes(detail);
        if (!ENDED[act.status]) return;
        var b = detail.querySelector("button[data-cancel]");
        if (b) b.remove();
        if (act.error) {
          field("error").textContent = act.error;
          document.querySelector('[data-section="error"]').hidden = false;
        }
        if (act.output_data !== null && act.output_data !== undefined) {
          output.textContent = pretty(act.output_data);
        } else {
          output.textContent = streamed;
        }
        output.hidden = !output.textContent;
        noOutput.hidden = !output.hidden;
        noOutput.textContent = "No output.";
        loadLogs(act.activation_id);
      }
    };
    return detailViewCache;
  }
  // loadLogs shows what the run wrote, once it has ended.
  function loadLogs(id) {
    AP.api("GET", "/api/v1/activations/" + encodeURIComponent(id) + "/logs").then(function (r) {
      if (!r.ok || !r.data.logs.length) return;
      var list = document.querySelector('[data-list="logs"]');
      list.replaceChildren.apply(list, r.data.logs.map(function (l) {
        var li = el("li", "log log-" + l.level);
        li.append(timeEl(l.ts), " ", el("span", "level", l.level), " ", el("span", "message", l.message));
        return li;
      }));
      AP.localTimes(list);
      list.hidden = false;
      document.querySelector('[data-empty="logs"]').hidden = true;
    });
  }

  document.querySelectorAll("form[data-activate-form]").forEach(activateForm);
  if (table) {
    listen("app_id=" + encodeURIComponent(table.dataset.appId), table.dataset.since);
  } else if (detail && !ENDED[detail.dataset.status]) {
    listen("activation_id=" + encodeURIComponent(detail.dataset.activation), detail.dataset.since);
    follow(detail.dataset.activation, [detailView()]);
  }
})();
