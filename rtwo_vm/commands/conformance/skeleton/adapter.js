// An RTWO VM conformance adapter skeleton (protocol rtwo-conformance/1, spec chapter 11.5),
// written by `rtwo-vm conformance init --lang javascript`. It passes `rtwo-vm conformance
// selftest` as it is and answers UNSUPPORTED_INPUT for every input your VM does not run yet.
//
// Run it with `node adapter.js` (Node.js 18 or later, no package needed); it reads the files
// init wrote beside it: schemas/ (the protocol and vector schemas) and rtwo-spec.json (the
// spec version, its request limits, isolation levels, seed size, word size and policy values).
//
// Your VM goes into runVm: it gets a vector input (chapter 11.2.3) and returns a result
// (chapter 7.5), or throws new Unsupported("what is missing") for an input it cannot run yet
// (say what is missing: the conformance report groups the unsupported vectors by it). Out of
// the box it runs one program: a container whose code is a single STOP, under a plain
// request. Logs go to stderr, never stdout.
"use strict";
const fs = require("fs");
const path = require("path");

const HERE = __dirname;
const SPEC = JSON.parse(fs.readFileSync(path.join(HERE, "rtwo-spec.json"), "utf8"));
const SCHEMAS = {};
for (const name of ["runner-message.schema.json", "vector.schema.json"]) {
  SCHEMAS[name] = JSON.parse(fs.readFileSync(path.join(HERE, "schemas", name), "utf8"));
}
const MAX_DEPTH = 32;                                   // 11.5.1: a line nested deeper is BAD_MESSAGE
const STOP_ONLY = "0x5254574f01000000010000000000000000"; // magic, version 1, code size 1, data 0, STOP

class Unsupported extends Error {}

function zeroUsage() {
  return { compute: 0, memory_pages: 0, storage_reads: 0, storage_writes: 0, storage_new_slots: 0, storage_units: 0 };
}

// Your VM: a vector input -> a result of chapter 7.5. This skeleton runs a single STOP.
function runVm(input) {
  const contracts = input.pre_state.contracts;
  const { message, policy, sandbox } = input;
  const names = Object.keys(contracts);
  const small = (word) => BigInt(word) < 2n ** BigInt(SPEC.word_bits);
  const plain = input.context.random_seed.length === 2 + 2 * SPEC.seed_size && names.length === 1
    && names[0] === message.to && message.call_data === "0x" && small(message.to) && small(message.caller)
    && small(input.context.block_time)
    && ["time_access", "randomness", "external_call"].every((k) => SPEC.policy_values[k].includes(policy[k]))
    && policy.allowed_operations === null && policy.forbidden_operations.length === 0
    && sandbox.isolation_level === "standard" && sandbox.storage_access === "read_write"
    && Object.keys(SPEC.maximum).every((k) => typeof sandbox.limits[k] === "number"
      && Number.isInteger(sandbox.limits[k]) && SPEC.minimum[k] <= sandbox.limits[k]
      && sandbox.limits[k] <= SPEC.maximum[k]);
  const entry = contracts[message.to] || {};
  if (!plain || entry.code !== STOP_ONLY || Object.keys(entry.storage || {}).length) {
    throw new Unsupported("not implemented yet: only a single STOP under a plain request runs");
  }
  return { status: "success", error: null, error_pc: null, output: "0x", state_changes: [], events: [],
    calls: [], usage: zeroUsage(), fee: 0 };
}

// --- the protocol (you should not need to change what follows) ---------------------------

function resolve(ref, base) {
  const [file, pointer] = ref.split("#");
  const name = file || base;
  let node = SCHEMAS[name];
  for (const part of (pointer || "").split("/").slice(1)) node = node[part];
  return [node, name];
}

function typeOk(v, kind) {
  switch (kind) {
    case "integer": return typeof v === "number" && Number.isInteger(v);
    case "number": return typeof v === "number";
    case "string": return typeof v === "string";
    case "boolean": return typeof v === "boolean";
    case "null": return v === null;
    case "array": return Array.isArray(v);
    case "object": return v !== null && typeof v === "object" && !Array.isArray(v);
    default: return false;
  }
}

function canonical(v) {
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v !== null && typeof v === "object") {
    return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
  }
  return JSON.stringify(v);
}

const length = (s) => [...s].length;                   // code points, as JSON Schema counts

// The first problem of value against schema (the keywords the protocol schemas use), or null.
function problem(v, s, base) {
  if (s === true) return null;
  if (s === false) return "not allowed";
  if (s.$ref) {
    const [target, name] = resolve(s.$ref, base);
    const p = problem(v, target, name);
    if (p) return p;
  }
  if (s.type !== undefined && ![].concat(s.type).some((k) => typeOk(v, k))) return `not of type ${s.type}`;
  if ("const" in s && canonical(v) !== canonical(s.const)) return `not ${JSON.stringify(s.const)}`;
  if (s.enum && !s.enum.some((e) => canonical(e) === canonical(v))) return "not one of the allowed values";
  if (s.oneOf && s.oneOf.filter((sub) => problem(v, sub, base) === null).length !== 1) {
    return "not exactly one of the allowed forms";
  }
  if (typeof v === "string") {
    if (length(v) < (s.minLength ?? 0) || length(v) > (s.maxLength ?? Infinity)) return "a string of the wrong length";
    if (s.pattern !== undefined && !new RegExp(s.pattern, "u").test(v)) return `${JSON.stringify(v).slice(0, 40)} does not match ${s.pattern}`;
  }
  if (typeof v === "number") {
    if (s.minimum !== undefined && v < s.minimum) return "below the minimum";
    if (s.maximum !== undefined && v > s.maximum) return "above the maximum";
  }
  if (Array.isArray(v)) {
    if (v.length < (s.minItems ?? 0) || v.length > (s.maxItems ?? Infinity)) return "a list of the wrong length";
    if (s.uniqueItems && new Set(v.map(canonical)).size !== v.length) return "items not unique";
    if (s.items !== undefined) {
      for (const item of v) {
        const p = problem(item, s.items, base);
        if (p) return p;
      }
    }
  }
  if (typeOk(v, "object")) return objectProblem(v, s, base);
  return null;
}

function objectProblem(v, s, base) {
  const keys = Object.keys(v);
  if (keys.length < (s.minProperties ?? 0)) return "too few members";
  for (const key of s.required || []) if (!Object.prototype.hasOwnProperty.call(v, key)) return `no member ${key}`;
  for (const key of keys) {
    if (s.propertyNames) {
      const p = problem(key, s.propertyNames, base);
      if (p) return p;
    }
    let matched = false;
    if (s.properties && Object.prototype.hasOwnProperty.call(s.properties, key)) {
      matched = true;
      const p = problem(v[key], s.properties[key], base);
      if (p) return p;
    }
    for (const [pattern, sub] of Object.entries(s.patternProperties || {})) {
      if (new RegExp(pattern, "u").test(key)) {
        matched = true;
        const p = problem(v[key], sub, base);
        if (p) return p;
      }
    }
    if (!matched && s.additionalProperties !== undefined) {
      const p = problem(v[key], s.additionalProperties, base);
      if (p) return `member ${key}: ${p}`;
    }
  }
  return null;
}

// Too deep (11.5.1) or with two members of one name in an object (11.5.4): scanned, not parsed.
function shapeProblem(line) {
  const stack = [];
  let inString = false, escaped = false, text = "", pendingKey = null;
  for (const ch of line) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === "\\") escaped = true;
      else if (ch === '"') { inString = false; pendingKey = text; continue; }
      text += ch;
      continue;
    }
    if (/\s/.test(ch)) continue;
    if (ch === '"') { inString = true; text = ""; continue; }
    const top = stack.length ? stack[stack.length - 1] : null;
    if (ch === ":" && pendingKey !== null && top !== null) {
      let key;
      try { key = JSON.parse('"' + pendingKey + '"'); } catch (e) { return "not JSON"; }
      if (top.has(key)) return "two members of one name";
      top.add(key);
    }
    pendingKey = null;
    if (ch === "{" || ch === "[") {
      stack.push(ch === "{" ? new Set() : null);
      if (stack.length > MAX_DEPTH) return "nested too deeply";
    } else if (ch === "}" || ch === "]") stack.pop();
  }
  return null;
}

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

function error(id, code, message) {
  send({ type: "error", id: typeof id === "string" ? id : null, code, message });
}

const EXECUTE = { $ref: "runner-message.schema.json#/$defs/execute" };
const HELLO = { $ref: "runner-message.schema.json#/$defs/hello" };
const version = SPEC.spec_version;
let greeted = false;

function handle(line) {          // false: exit (with process.exitCode set)
  let msg = null;
  if (shapeProblem(line) === null) {
    try { msg = JSON.parse(line); } catch (e) { msg = null; }
  }
  if (msg === null || typeof msg !== "object" || Array.isArray(msg) || typeof msg.type !== "string") {
    error(null, "BAD_MESSAGE", "not a JSON object with a string type, or nested too deeply");
    return true;
  }
  const id = msg.id;
  if (msg.type === "hello") {
    if (typeof msg.protocol === "string" && !msg.protocol.endsWith("/1")) {
      error(null, "UNSUPPORTED_PROTOCOL", "this adapter speaks rtwo-conformance/1");
      process.exitCode = 3;
      return false;
    }
    if (problem(msg, HELLO, "runner-message.schema.json") !== null) {
      error(null, "BAD_MESSAGE", "not a hello of rtwo-conformance/1");
      process.exitCode = 3;
      return false;
    }
    if (msg.spec_version !== version) {
      send({ type: "error", id: null, code: "UNSUPPORTED_SPEC_VERSION",
        message: `this adapter implements spec ${version}`, spec_versions: [version] });
      process.exitCode = 3;
      return false;
    }
    greeted = true;
    send({ type: "hello", protocol: "rtwo-conformance/1", spec_versions: [version],
      implementation: { name: SPEC.name, version: "0.1.0" }, capabilities: [] });
  } else if (msg.type === "execute") {
    let p = greeted ? problem(msg, EXECUTE, "runner-message.schema.json") : "execute before hello";
    if (p === null && !SPEC.isolation_levels.includes(msg.input.sandbox.isolation_level)) {
      p = "an unknown isolation level (10.2)";
    }
    if (p !== null) error(id, "BAD_MESSAGE", p.slice(0, 200));
    else if (msg.trace && msg.trace_format === "eip3155") error(id, "UNSUPPORTED_INPUT", "no EIP-3155 traces here");
    else {
      try {
        send({ type: "result", id, result: runVm(msg.input) });
      } catch (e) {
        if (e instanceof Unsupported) error(id, "UNSUPPORTED_INPUT", String(e.message).slice(0, 500));
        else {
          process.stderr.write(`${id}: ${e && e.stack}\n`);
          error(id, "ADAPTER_FAILURE", String(e).slice(0, 500));
        }
      }
    }
  } else if (msg.type === "shutdown") {
    if (Object.keys(msg).length !== 1) {
      error(null, "BAD_MESSAGE", "a shutdown has no other member");
      return true;
    }
    send({ type: "bye" });
    process.exitCode = 0;
    return false;
  } else {
    error(id, "UNKNOWN_TYPE", `unknown message type ${JSON.stringify(msg.type.slice(0, 40))}`);
  }
  return true;
}

// stdin's lines, each held up to MAX_LINE bytes: a longer one is dropped to its end and
// answered as a malformed message (readline would hold a line of any length).
const MAX_LINE = 16 << 20;
let done = false;
let held = [];
let size = 0;
let dropping = false;
function line(text) {
  if (done) return;
  if (!handle(text)) {
    done = true;
    process.stdin.destroy();
  }
}
process.stdin.on("data", (chunk) => {
  let start = 0;
  for (let nl = chunk.indexOf(10); nl !== -1 && !done; nl = chunk.indexOf(10, start)) {
    const part = chunk.subarray(start, nl);
    start = nl + 1;
    if (dropping || size + part.length > MAX_LINE) {
      line("");                      // handle answers "" with BAD_MESSAGE
    } else {
      held.push(part);
      line(Buffer.concat(held).toString("utf8").replace(/\r$/, ""));
    }
    held = []; size = 0; dropping = false;
  }
  const rest = chunk.subarray(start);
  if (!dropping && size + rest.length > MAX_LINE) { dropping = true; held = []; size = 0; }
  if (!dropping && rest.length) { held.push(rest); size += rest.length; }
});
process.stdin.on("end", () => {
  if (!dropping && held.length) line(Buffer.concat(held).toString("utf8"));
});
