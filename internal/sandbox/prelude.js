// The sandbox's prelude: it runs before the user's code, keeps the one host
// function to itself and builds ctx. The entry points it leaves on the
// global object cannot be replaced by the user's code.
(function () {
  "use strict";
  const host = globalThis.__host;
  delete globalThis.__host;
  const g = globalThis;
  const fix = (name, value) => Object.defineProperty(g, name, { value, writable: false, configurable: false, enumerable: false });

  // Names of host errors become the exceptions' names (ValidationError…).
  const thrown = (e) => {
    const err = new Error(e.message);
    err.name = e.name || "Error";
    return err;
  };
  const call = (name, args) => {
    const o = JSON.parse(host(name, JSON.stringify(args)));
    if (o.error) throw thrown(o.error);
    return o.value;
  };
  const text = (v) => {
    if (typeof v === "string") return v;
    if (v instanceof Error) return v.stack ? `${v.name}: ${v.message}\n${v.stack}` : `${v.name}: ${v.message}`;
    try {
      const s = JSON.stringify(v);
      return s === undefined ? String(v) : s;
    } catch (_) {
      return String(v);
    }
  };
  const logger = (level) => (...parts) => { call("log", { level, parts: parts.map(text) }); };

  let ctx = null;
  let state = "pending";
  let output = null;
  let failure = null;

  fix("__setup", (fieldsJSON, namesJSON) => {
    ctx = JSON.parse(fieldsJSON);
    for (const path of JSON.parse(namesJSON)) {
      const parts = path.split(".");
      let at = ctx;
      for (const p of parts.slice(0, -1)) at = at[p] = at[p] || {};
      at[parts[parts.length - 1]] = (...args) => new Promise((resolve, reject) => {
        try { resolve(call(path, args)); } catch (e) { reject(e); }
      });
    }
    ctx.log = logger("info");
    g.console = Object.freeze({ log: logger("info"), info: logger("info"), debug: logger("debug"), warn: logger("warn"), error: logger("error") });
    return true;
  });

  fix("__start", (inputJSON) => {
    if (typeof g.run !== "function") {
      state = "failed";
      failure = { name: "Error", message: "the code must define async function run(input, ctx)" };
      return true;
    }
    let p;
    try {
      p = Promise.resolve(g.run(JSON.parse(inputJSON), ctx));
    } catch (e) {
      p = Promise.reject(e);
    }
    // The handlers allocate nothing: the result is encoded when Go asks
    // for it, where running out of memory is an exception Go sees.
    p.then((v) => {
      output = v;
      state = "done";
    }, (e) => {
      // QuickJS throws null when it cannot even allocate the error: out
      // of memory (failure stays null). A script's own throw null reads
      // the same.
      failure = e === null ? null : e instanceof Error
        ? { name: e.name, message: String(e.message), stack: e.stack || "" }
        : { name: "Error", message: text(e) };
      state = "failed";
    }).catch(() => {
      // Only exhaustion gets here (the handlers above catch the rest):
      // leave failure null, which Go reads as out of memory, and
      // allocate nothing.
      failure = null;
      state = "failed";
    });
    return true;
  });

  // The entry points above answer true, and these a string, once they got
  // to their end: QuickJS throws null when it cannot allocate even an
  // error, and a null exception reaches Go as no error at all, so an
  // answer missing is how Go tells that the run ran out of memory.
  fix("__state", () => state);
  fix("__output", () => JSON.stringify(output === undefined ? null : output));
  fix("__failure", () => JSON.stringify(failure));
})();
