// Agent Platform UI: progressive enhancement, no framework, no build.
// Pages are plain server-rendered HTML; this file adds local times,
// fetch submissions with errors shown beside their field, and the pages'
// small interactions. The Content-Security-Policy allows no inline script:
// behaviour hangs on data- attributes. Later pages may add their own file
// and use the helpers on window.AP.
"use strict";
(function () {
  // Timestamps: <time datetime="RFC 3339"> shows the UTC text the server
  // rendered; here it becomes the reader's local time.
  var timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  function localTimes(root) {
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) return;
      el.title = d.toISOString();
      el.textContent = timeFormat.format(d);
    });
  }

  // api calls the JSON API with the session cookie (same origin: the
  // API's CSRF check lets it through) and answers {ok, status, data}.
  // A failure of the network is an answer too, with a detail to show.
  function api(method, url, body, contentType) {
    var opts = { method: method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) {
      opts.body = body;
      opts.headers["Content-Type"] = contentType || "application/json";
    }
    return fetch(url, opts).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!res.ok && !(data && data.detail)) {
          data = { detail: "The server answered " + res.status + ".", status_code: res.status };
        }
        return { ok: res.ok, status: res.status, data: data };
      });
    }, function () {
      return { ok: false, status: 0, data: { detail: "Could not reach the server. Check your connection and try again." } };
    });
  }

  // Errors beside their field: each form has elements [data-error-for=name]
  // and one [data-error-for=""] for errors of the whole form.
  function clearErrors(form) {
    form.querySelectorAll("[data-error-for]").forEach(function (el) { el.textContent = ""; });
    form.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
  }
  function errorSlot(form, field) {
    return form.querySelector('[data-error-for="' + field + '"]') || form.querySelector('[data-error-for=""]');
  }
  function showError(form, field, message) {
    var slot = errorSlot(form, field);
    if (typeof message === "string") slot.textContent = message; else slot.replaceChildren(message);
    var input = field && form.querySelector('[name="' + field + '"]');
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.focus();
    } else {
      slot.setAttribute("tabindex", "-1");
      slot.focus();
    }
  }
  // fieldOf finds the field an API error names: the error body has no
  // field of its own, its detail names it ("Missing required field:
  // email", "Passwords do not match", "scopes[0]…"). Errors that are not
  // about one field (wrong password, rate limit) belong to the form.
  function fieldOf(form, data) {
    var type = data && data.error_type;
    if (type !== "ValidationError" && type !== "ConflictError") return "";
    var detail = String(data.detail || "").toLowerCase();
    var names = Array.prototype.map.call(form.querySelectorAll("[data-error-for]"), function (el) {
      return el.getAttribute("data-error-for");
    }).filter(Boolean);
    if (names.indexOf("confirm_password") >= 0 && /match|confirm/.test(detail)) return "confirm_password";
    names.sort(function (a, b) { return b.length - a.length; });
    for (var i = 0; i < names.length; i++) {
      var n = names[i];
      if (detail.indexOf(n) >= 0 || detail.indexOf(n.replace(/_/g, " ")) >= 0) return n;
    }
    return "";
  }
  // busy shows a form's loading state and keeps it from being sent twice.
  function busy(form, on) {
    var button = form.querySelector("button[type=submit]");
    form.setAttribute("aria-busy", on ? "true" : "false");
    if (!button) return;
    if (on) {
      button.dataset.idleText = button.textContent;
      button.textContent = button.dataset.busyText || "Working…";
    } else if (button.dataset.idleText) {
      button.textContent = button.dataset.idleText;
    }
    button.disabled = on;
  }

  // Login and registration: the forms post to the API's form endpoints and
  // work without JavaScript; with it, the answer is JSON and an error goes
  // beside its field instead of replacing the page.
  function authForm(form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearErrors(form);
      busy(form, true);
      var body = new URLSearchParams(new FormData(form)).toString();
      api("POST", form.action, body, "application/x-www-form-urlencoded").then(function (r) {
        if (r.ok) {
          window.location.assign(form.dataset.next || "/");
          return;
        }
        busy(form, false);
        showError(form, fieldOf(form, r.data), r.data.detail);
      });
    });
  }

  // A manifest's path in an import error (agents[1].agent_config.model)
  // is set apart, so that the eye finds it.
  var pathRe = /[A-Za-z_][\w-]*(?:\[\d+\]|\.[A-Za-z_][\w-]*)+/;
  function importError(detail) {
    detail = String(detail || "");
    var m = pathRe.exec(detail);
    if (!m) return detail;
    var frag = document.createDocumentFragment();
    var code = document.createElement("code");
    code.className = "path";
    code.textContent = m[0];
    frag.append(detail.slice(0, m.index), code, detail.slice(m.index + m[0].length));
    return frag;
  }

  // importManifest imports a manifest through the API; once it is in, the
  // apps list opens with its notice (r.imported), else r is the error.
  function importManifest(body) {
    var type = body.charAt(0) === "{" ? "application/json" : "application/yaml";
    return api("POST", "/api/v1/apps/import-manifest", body, type).then(function (r) {
      if (r.ok && r.data && r.data.app_id) {
        r.imported = true;
        window.location.assign("/?imported=" + encodeURIComponent(r.data.app_id));
      }
      return r;
    });
  }

  function importForm(form) {
    var file = form.querySelector('input[type="file"]');
    var text = form.querySelector("textarea");
    file.addEventListener("change", function () {
      if (!file.files.length) return;
      file.files[0].text().then(function (content) { text.value = content; });
    });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearErrors(form);
      var body = text.value.trim();
      if (!body) {
        showError(form, "manifest", "Paste a manifest or choose a file.");
        return;
      }
      busy(form, true);
      importManifest(body).then(function (r) {
        if (r.imported) return;
        busy(form, false);
        var field = r.status === 400 || r.status === 409 || r.status === 413 ? "manifest" : "";
        showError(form, field, field ? importError(r.data.detail) : r.data.detail);
      });
    });
  }

  // The empty apps list offers the example app: one click fetches its
  // manifest from the binary and imports it like any other.
  function exampleForm(form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearErrors(form);
      busy(form, true);
      fetch(form.dataset.manifest, { credentials: "same-origin" }).then(function (res) {
        if (!res.ok) throw new Error(res.status);
        return res.text();
      }).then(importManifest, function () {
        return { ok: false, status: 0, data: { detail: "Could not load the example app. Try again in a moment." } };
      }).then(function (r) {
        if (r.imported) return;
        busy(form, false);
        showError(form, "", r.data.detail);
      });
    });
  }

  function cell(label, content) {
    var td = document.createElement("td");
    if (label) td.setAttribute("data-label", label);
    if (typeof content === "string") td.textContent = content; else td.append(content);
    return td;
  }
  function code(text) { var c = document.createElement("code"); c.textContent = text; return c; }
  function muted(text) { var s = document.createElement("span"); s.className = "muted"; s.textContent = text; return s; }
  // el, statusEl, timeEl, duration and clip build what the live pages
  // show (activations.js, functions.js), as text, never as HTML; duration
  // and clip format as the server does (live.go).
  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function statusEl(status) { return el("span", "status status-" + status, status); }
  function duration(ms) {
    if (ms === null || ms === undefined) return "";
    if (ms < 1000) return ms + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
    return Math.floor(ms / 60000) + " min " + Math.floor((ms % 60000) / 1000) + " s";
  }
  function clip(s) {
    var chars = Array.from(s);
    return chars.length <= 140 ? s : chars.slice(0, 139).join("") + "…";
  }
  function timeEl(iso) {
    if (!iso) return muted("never");
    var t = document.createElement("time");
    t.setAttribute("datetime", iso);
    t.textContent = iso;
    return t;
  }

  function keysPage(form) {
    var table = document.querySelector('table[data-list="keys"]');
    var tbody = table.querySelector("tbody");
    var empty = document.querySelector('[data-empty="keys"]');
    var shown = document.getElementById("new-key");
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearErrors(form);
      shown.hidden = true;
      var fd = new FormData(form);
      var body = { name: String(fd.get("name") || "").trim(), scopes: fd.getAll("scopes") };
      if (fd.get("app_id")) body.app_id = fd.get("app_id");
      if (fd.get("expires_at")) {
        // The end of the chosen day, in the reader's time zone.
        var end = new Date(fd.get("expires_at") + "T23:59:59");
        if (isNaN(end)) { showError(form, "expires_at", "Choose a valid date."); return; }
        body.expires_at = end.toISOString();
      }
      if (!body.name) { showError(form, "name", "Give the key a name."); return; }
      if (!body.scopes.length) { showError(form, "scopes", "Choose at least one scope."); return; }
      busy(form, true);
      api("POST", "/api/v1/user/api-keys", JSON.stringify(body)).then(function (r) {
        busy(form, false);
        if (!r.ok) {
          showError(form, fieldOf(form, r.data) || (/app/i.test(r.data.detail) ? "app_id" : ""), r.data.detail);
          return;
        }
        var k = r.data;
        shown.querySelector("[data-new-key]").textContent = k.key;
        shown.querySelector("[data-new-key-name]").textContent = "“" + k.name + "”";
        shown.hidden = false;
        var select = form.querySelector("select[name=app_id]");
        var app = k.app_id ? select.options[select.selectedIndex].text : null;
        var tr = document.createElement("tr");
        tr.dataset.keyId = k.id;
        var scopes = document.createDocumentFragment();
        k.scopes.forEach(function (s, i) { if (i) scopes.append(", "); scopes.append(code(s)); });
        var revoke = document.createElement("button");
        revoke.type = "button";
        revoke.className = "danger";
        revoke.textContent = "Revoke";
        revoke.dataset.revoke = k.id;
        revoke.dataset.name = k.name;
        revoke.setAttribute("aria-label", "Revoke key " + k.name);
        tr.append(cell("Name", k.name), cell("Prefix", code(k.key_prefix + "…")), cell("Scopes", scopes),
          cell("App", app ? app : muted("every app")), cell("Last used", muted("never")),
          cell("Expires", timeEl(k.expires_at)), cell("", revoke));
        tbody.prepend(tr);
        localTimes(tr);
        table.hidden = false;
        empty.hidden = true;
        form.reset();
      });
    });
    // Revoking takes two clicks: the first asks, the second (within a few
    // seconds) revokes.
    tbody.addEventListener("click", function (ev) {
      var button = ev.target.closest("button[data-revoke]");
      if (!button) return;
      if (button.dataset.armed !== "true") {
        button.dataset.armed = "true";
        button.textContent = "Click again to revoke";
        setTimeout(function () {
          if (button.isConnected && button.dataset.armed === "true") {
            button.dataset.armed = "";
            button.textContent = "Revoke";
          }
        }, 5000);
        return;
      }
      button.disabled = true;
      button.textContent = "Revoking…";
      api("DELETE", "/api/v1/user/api-keys/" + encodeURIComponent(button.dataset.revoke)).then(function (r) {
        if (!r.ok && r.status !== 404) {
          button.disabled = false;
          button.dataset.armed = "";
          button.textContent = "Revoke";
          showError(form, "", "Could not revoke “" + button.dataset.name + "”: " + r.data.detail);
          return;
        }
        button.closest("tr").remove();
        if (!tbody.children.length) {
          table.hidden = true;
          empty.hidden = false;
        }
        var status = document.getElementById("keys-status");
        status.textContent = "Revoked “" + button.dataset.name + "”.";
        status.hidden = false;
      });
    });
  }

  window.AP = { api: api, localTimes: localTimes, clearErrors: clearErrors, showError: showError, fieldOf: fieldOf, busy: busy,
    el: el, statusEl: statusEl, timeEl: timeEl, duration: duration, clip: clip };

  localTimes(document);
  document.querySelectorAll("form[data-auth-form]").forEach(authForm);
  document.querySelectorAll("form[data-import-form]").forEach(importForm);
  document.querySelectorAll("form[data-example-form]").forEach(exampleForm);
  document.querySelectorAll("form[data-key-form]").forEach(keysPage);
})();
