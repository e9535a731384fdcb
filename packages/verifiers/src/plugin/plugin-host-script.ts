/**
 * The program a plugin's process runs first (CommonJS, passed with `--eval` so it needs no file
 * of its own, and no read permission, next to the built package). Node's permission model
 * already refuses files outside the plugin's folder, child processes, workers and native addons;
 * this closes what that model leaves open: the network (Node 20 has no network permission) and
 * every way to signal or reprioritise another process (`process.kill`, `process._kill`,
 * `process._debugProcess`, `os.setPriority`). Only then does it import the plugin, named in the
 * first message from the server. The plugin's `fetch`, `sql` and `redis` are proxies that ask
 * the server over the channel on descriptor 3, where the SSRF guard and the configured connections apply.
 * See `isolated-verifier.ts` for the protocol.
 */
export const PLUGIN_HOST_SCRIPT = String.raw`
'use strict';
const { syncBuiltinESMExports } = require('node:module');
const v8 = require('node:v8');
// The channel to the server, descriptor 3, opened before net is closed: the only way out.
// Frames are a 4-byte big-endian length and V8's serialization (see plugin-channel.ts).
const channel = new (require('node:net').Socket)({ fd: 3, readable: true, writable: true });
function send(message) {
  const body = v8.serialize(message);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  channel.write(Buffer.concat([head, body]));
}
// Node makes stdout and stderr on first use, with net.Socket: make them now, before net is
// closed, or the plugin's first console.error would throw.
void process.stdout;
void process.stderr;

class PluginCapabilityDenied extends Error {
  constructor(code, what) {
    super(code + ': ' + what + ' is not available to a verifier plugin; use the fetch, sql or redis its context grants');
    this.name = 'PluginCapabilityDenied';
    this.code = code;
  }
}
const NETWORK = 'PLUGIN_NETWORK_DENIED';
const PROCESS = 'PLUGIN_PROCESS_DENIED';

function denied(code, what) {
  return function denied() {
    throw new PluginCapabilityDenied(code, what);
  };
}
function close(target, keys, code, label) {
  if (target === undefined || target === null) return;
  for (const key of keys) {
    if (!(key in target)) continue;
    Object.defineProperty(target, key, {
      value: denied(code, label + '.' + key),
      // Writable: instances assign some of these (an Agent its createConnection). The original is
      // gone either way; what a plugin puts back is its own code, which meets the same closed doors.
      writable: true,
      configurable: false,
      enumerable: true,
    });
  }
}

// 1. The network. Prototype methods too, so a socket made some other way cannot connect.
const net = require('node:net');
close(net.Socket.prototype, ['connect'], NETWORK, 'net.Socket.prototype');
close(net.Server.prototype, ['listen'], NETWORK, 'net.Server.prototype');
close(net, ['connect', 'createConnection', 'createServer', 'Socket', 'Stream', 'Server'], NETWORK, 'net');
close(require('node:tls'), ['connect', 'createServer', 'TLSSocket', 'Server', 'createSecurePair'], NETWORK, 'tls');
for (const name of ['node:http', 'node:https']) {
  const module = require(name);
  close(module.Agent.prototype, ['createConnection'], NETWORK, name.slice(5) + '.Agent.prototype');
  close(module, ['request', 'get', 'createServer', 'Server', 'Agent', 'ClientRequest'], NETWORK, name.slice(5));
}
close(require('node:http2'), ['connect', 'createServer', 'createSecureServer'], NETWORK, 'http2');
const dgram = require('node:dgram');
close(dgram.Socket.prototype, ['bind', 'connect', 'send'], NETWORK, 'dgram.Socket.prototype');
close(dgram, ['createSocket', 'Socket'], NETWORK, 'dgram');
const dns = require('node:dns');
const dnsKeys = (target) => Object.keys(target).filter((key) => /^(lookup|resolve|reverse|Resolver)/.test(key));
close(dns.promises, dnsKeys(dns.promises), NETWORK, 'dns.promises');
close(dns, dnsKeys(dns), NETWORK, 'dns');
close(require('node:tty'), ['ReadStream', 'WriteStream'], NETWORK, 'tty');
close(globalThis, ['fetch', 'WebSocket', 'EventSource'], NETWORK, 'globalThis');

// 2. Other processes and threads, and the ways around the module system: a child process, a
// worker or a loader thread would start with none of the above closed; the inspector listens on
// the network; bindings and native addons are below JavaScript. The permission model refuses
// most of these too; closing them here gives each the same typed code.
close(require('node:child_process'), ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork', 'ChildProcess'], PROCESS, 'child_process');
close(require('node:worker_threads'), ['Worker'], PROCESS, 'worker_threads');
close(require('node:cluster'), ['fork', 'setupPrimary', 'setupMaster'], PROCESS, 'cluster');
close(require('node:inspector'), ['open', 'Session', 'url', 'waitForDebugger'], PROCESS, 'inspector');
close(require('node:module'), ['register'], PROCESS, 'module');
// Signals: Node's permission model does not cover process.kill, and _kill is the raw binding
// under it. _debugProcess(pid) sends SIGUSR1, which opens the inspector of the target (the
// server); setPriority renices any process this uid may touch. The uid switches are closed so
// that a plugin run as root cannot become someone else, and process.binding is closed even
// though the permission model refuses it already.
close(process, ['binding', '_linkedBinding', 'dlopen', 'kill', '_kill', '_debugProcess', '_debugEnd', 'execve',
  'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups'], PROCESS, 'process');
close(require('node:os'), ['setPriority'], PROCESS, 'os');
syncBuiltinESMExports();

// 3. Talk to the host.
let nextCall = 0;
const calls = new Map();
const checks = new Map();

function errorOut(error) {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const out = { name: error.name, message: error.message };
  if (typeof error.code === 'string') out.code = error.code;
  if (error.evidence !== undefined) {
    try {
      out.evidence = structuredClone(error.evidence);
    } catch {}
  }
  return out;
}
function errorIn(shape) {
  const error = new Error(shape.message);
  error.name = shape.name;
  if (shape.code !== undefined) error.code = shape.code;
  if (shape.evidence !== undefined) error.evidence = shape.evidence;
  return error;
}

function ask(checkId, grant, args, signal) {
  if (signal && signal.aborted) return Promise.reject(signal.reason);
  const id = ++nextCall;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      calls.delete(id);
      send({ type: 'abort-call', id });
      reject(signal.reason);
    };
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    calls.set(id, {
      resolve,
      reject,
      done: () => signal && signal.removeEventListener('abort', onAbort),
    });
    send({ type: 'call', id, checkId, grant, args });
  });
}

async function proxiedFetch(checkId, input, init) {
  init = init || {};
  const request = input instanceof Request ? input : null;
  const url = request ? request.url : input instanceof URL ? input.href : String(input);
  const headers = [...new Headers(init.headers || (request ? request.headers : undefined))];
  const source = init.body !== undefined ? init.body : request ? request.body : null;
  const body = source === null || source === undefined ? undefined : new Uint8Array(await new Response(source).arrayBuffer());
  const reply = await ask(checkId, 'fetch', [url, {
    method: init.method || (request ? request.method : 'GET'),
    headers,
    ...(body ? { body } : {}),
    ...(init.redirect ? { redirect: init.redirect } : request ? { redirect: request.redirect } : {}),
  }], init.signal || (request ? request.signal : undefined));
  const response = new Response(reply.body, { status: reply.status, statusText: reply.statusText, headers: reply.headers });
  Object.defineProperty(response, 'url', { value: reply.url });
  Object.defineProperty(response, 'redirected', { value: reply.redirected });
  return response;
}

function deepFreeze(value) {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze(value[key]);
  }
  return value;
}

function contextFor(id, input, controller) {
  const started = performance.now();
  const log = (level) => (message, fields) => {
    try {
      send({ type: 'log', checkId: id, level, message: String(message), fields: fields === undefined ? undefined : structuredClone(fields) });
    } catch {
      send({ type: 'log', checkId: id, level, message: String(message) });
    }
  };
  const context = {
    verifier: input.verifier,
    phase: input.phase,
    proposal: deepFreeze(input.proposal),
    observation: deepFreeze(input.observation),
    postcondition: deepFreeze(input.postcondition),
    options: deepFreeze(input.options),
    signal: controller.signal,
    timeoutMs: input.timeoutMs,
    logger: Object.freeze({ debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') }),
    now: () => new Date(input.now + (performance.now() - started)),
  };
  if (input.grants.fetch) context.fetch = (url, init) => proxiedFetch(id, url, init);
  if (input.grants.sql !== null) {
    context.sql = Object.freeze({
      name: input.grants.sql,
      query: (text, params, options) =>
        ask(id, 'sql', [text, params, { timeoutMs: options && options.timeoutMs, maxRows: options && options.maxRows }], options && options.signal),
    });
  }
  if (input.grants.redis !== null) {
    context.redis = Object.freeze({
      name: input.grants.redis,
      command: (name, args, options) =>
        ask(id, 'redis', [name, args, { timeoutMs: options && options.timeoutMs }], options && options.signal),
    });
  }
  return Object.freeze(context);
}

let verifier;

async function runCheck(id, input) {
  const controller = new AbortController();
  checks.set(id, controller);
  try {
    const value = await verifier.check(contextFor(id, input, controller));
    try {
      send({ type: 'result', id, ok: true, value });
    } catch (error) {
      send({ type: 'result', id, ok: false, error: { name: 'ResultNotTransferable', message: 'the verifier returned a value that cannot leave its process: ' + error.message } });
    }
  } catch (error) {
    send({ type: 'result', id, ok: false, error: errorOut(error) });
  } finally {
    checks.delete(id);
  }
}

let loading = false;
let chunks = [];
let size = 0;
channel.on('data', (chunk) => {
  chunks.push(chunk);
  size += chunk.length;
  for (;;) {
    if (size < 4) return;
    if (chunks[0].length < 4) chunks = [Buffer.concat(chunks, size)];
    const length = chunks[0].readUInt32BE(0);
    // Joined only once the whole frame is there: a fetch body arrives in many chunks.
    if (size < 4 + length) return;
    const all = Buffer.concat(chunks, size);
    chunks = [all.subarray(4 + length)];
    size = all.length - 4 - length;
    onMessage(v8.deserialize(all.subarray(4, 4 + length)));
  }
});
function onMessage(message) {
  if (message.type === 'load' && !loading) {
    loading = true;
    void load(message);
  } else if (message.type === 'check') void runCheck(message.id, message.context);
  else if (message.type === 'abort') checks.get(message.id)?.abort(errorIn(message.reason));
  else if (message.type === 'reply') {
    const call = calls.get(message.id);
    if (call === undefined) return;
    calls.delete(message.id);
    call.done();
    if (message.ok) call.resolve(message.value);
    else call.reject(errorIn(message.error));
  } else if (message.type === 'ping') send({ type: 'pong' });
}
// The server is gone (or closed the plugin): so is the plugin.
channel.on('close', () => process.exit(0));
channel.on('error', () => process.exit(0));

// 4. Load the plugin, and describe it to the host, which validates it as it does a built-in.
function optionsResult(schema, options) {
  const standard = schema && schema['~standard'];
  if (typeof standard !== 'object' || standard === null || typeof standard.validate !== 'function') return undefined;
  const result = standard.validate(options === undefined ? {} : options);
  if (result instanceof Promise) {
    result.catch(() => undefined);
    return { async: true };
  }
  if (result.issues !== undefined) {
    return {
      issues: result.issues.map((issue) => ({
        message: String(issue.message),
        path: (issue.path || []).map((segment) => (typeof segment === 'object' && segment !== null ? segment.key : segment)),
      })),
    };
  }
  return { value: result.value };
}

async function load(spec) {
  let module;
  try {
    module = await import(spec.url);
  } catch (error) {
    const out = errorOut(error);
    // The permission model names what it refused: say so, or "restricted" explains nothing.
    if (error && error.code === 'ERR_ACCESS_DENIED' && error.resource) out.message += ' (reading ' + error.resource + ')';
    send({ type: 'load-failed', error: out });
    return;
  }
  const exported = module[spec.exportName];
  if (typeof exported !== 'object' || exported === null || Array.isArray(exported)) {
    send({ type: 'load-failed', error: { name: 'Error', message: 'no verifier', code: 'EXPORT_MISSING' } });
    return;
  }
  verifier = exported;
  const descriptor = {};
  for (const key of ['id', 'version', 'apiVersion', 'description', 'handles', 'phase', 'timeoutMs', 'measurement', 'requires']) {
    if (exported[key] !== undefined) descriptor[key] = exported[key];
  }
  descriptor.checkType = typeof exported.check;
  descriptor.options = exported.options === undefined ? undefined : optionsResult(exported.options, spec.options) || { notSchema: true };
  try {
    send({ type: 'ready', descriptor });
  } catch (error) {
    send({ type: 'load-failed', error: { name: 'Error', message: 'its definition cannot be described to the host: ' + error.message } });
  }
}
`;
