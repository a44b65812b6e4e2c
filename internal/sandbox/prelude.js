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
    const json = JSON.stringify(args);
    if (json.length > caps.call) {
      // Refused in the VM: arguments bigger than any call takes never
      // become a Go string.
      throw new RangeError(`the arguments of ctx.${name} are ${json.length} characters of JSON, over the limit of ${caps.call}`);
    }
    const o = JSON.parse(host(name, json));
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
  // Caps from Go (__setup): a log line and an error text cross to Go cut
  // to about their cap, so that a 30 MB console.log or a 20 MB throw never
  // becomes a 30 MB Go string; Go cuts them exactly, in bytes.
  let caps = { log: 256 * 1024, error: 64 * 1024, call: 8 * 1024 * 1024 };
  const cut = (s, n) => (s.length > n ? s.slice(0, n + 1) : s);
  const logger = (level) => (...parts) => { call("log", { level, parts: [cut(parts.map(text).join(" "), caps.log)] }); };
  // What a thrown value reads as: an Error its name, message and stack;
  // any other value what JavaScript engines print for it uncaught
  // (Uncaught undefined, Uncaught 42), a string itself.
  const failureOf = (e) => {
    if (e instanceof Error) {
      return { name: cut(String(e.name), caps.error), message: cut(String(e.message), caps.error), stack: cut(String(e.stack || ""), caps.error) };
    }
    if (typeof e === "string") return { name: "Error", message: cut(e, caps.error) };
    if (e === undefined || typeof e !== "object") return { name: "Error", message: "Uncaught " + String(e) };
    return { name: "Error", message: cut(text(e), caps.error) };
  };

  let ctx = null;
  let state = "pending";
  let output = null;
  let failure = null;
  let threwNull = false; // run() rejected with null itself

  fix("__setup", (fieldsJSON, namesJSON, capsJSON) => {
    caps = JSON.parse(capsJSON);
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
      // the same; Go tells them apart as well as it can (__roomy).
      threwNull = e === null;
      failure = threwNull ? null : failureOf(e);
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
  // __roomy answers, after a null was thrown (by the top level: thrown;
  // else run() rejected with null), whether n bytes can be allocated now:
  // false (or no answer) means the memory is still full. A failure that is
  // null for want of memory to record it is no null thrown: false.
  fix("__roomy", (n, thrown) => {
    if (!thrown && !threwNull) return false;
    try {
      return new ArrayBuffer(n).byteLength === n;
    } catch (_) {
      return false;
    }
  });
})();
