// tests/mcp/mcp_client.mjs — drives `agentnest mcp` with the official MCP
// TypeScript SDK client (pinned in package-lock.json) and with raw stdio for
// what the SDK will not send (malformed JSON, a non-JSON-RPC object).  Run by
// tests/integration/mcp_test.c:  node mcp_client.mjs AGENTNEST_BIN STORE_ROOT
// Prints "SANDBOX <id>" for every sandbox it saw made and "ok N - what" per
// check; exits non-zero at the first failed check.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawn, execFileSync } from 'node:child_process';
import Ajv from 'ajv';

const [bin, root] = process.argv.slice(2);
if (!bin || !root) { console.error('usage: mcp_client.mjs AGENTNEST STORE'); process.exit(2); }
let n = 0;
function ok(cond, what, detail) {
  n++;
  if (!cond) {
    console.log(`not ok ${n} - ${what}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`);
    process.exit(1);
  }
  console.log(`ok ${n} - ${what}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const seen = new Set();
function saw(id) { if (id && !seen.has(id)) { seen.add(id); console.log(`SANDBOX ${id}`); } }
function storeList() {
  return JSON.parse(execFileSync(bin, ['--root', root, 'ls', '--json'], { encoding: 'utf8' }));
}
async function until(pred, what, ms = 30000) {
  for (let t = 0; t < ms; t += 200) { if (await pred()) return true; await sleep(200); }
  ok(false, what);
}

// ---- the SDK client ----------------------------------------------------------------------
const transport = new StdioClientTransport({ command: bin, args: ['--root', root, 'mcp', '--max-sandboxes', '4', '--max-lifetime', '20m'], stderr: 'inherit' });
const client = new Client({ name: 'agentnest-test', version: '1.0.0' });
await client.connect(transport);
ok(client.getServerVersion()?.name === 'agentnest', 'initialize: serverInfo', client.getServerVersion());
ok(client.getServerCapabilities()?.tools !== undefined, 'initialize: tools capability');

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const want of ['create', 'run_code', 'exec', 'write_file', 'read_file', 'list_files', 'artifacts',
                    'snapshot', 'restore', 'fork', 'ls', 'inspect', 'events', 'destroy',
                    'session_start', 'session_run', 'session_stop', 'network', 'network_change', 'extend', 'audit'])
  ok(names.includes(want), `tools/list has ${want}`, names);
const ajv = new Ajv({ strict: false });
for (const t of tools) {
  ok(t.inputSchema?.type === 'object' && t.outputSchema?.type === 'object', `${t.name}: input and output schemas`);
  ok(ajv.validateSchema(t.inputSchema) && ajv.validateSchema(t.outputSchema), `${t.name}: schemas are valid JSON Schema`, ajv.errors);
}
const schemaOf = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.outputSchema)]));
async function call(name, args, opts) {
  const r = await client.callTool({ name, arguments: args }, undefined, opts);
  if (!r.isError) {
    ok(schemaOf[name](r.structuredContent), `${name}: structuredContent matches outputSchema`, schemaOf[name].errors);
    ok(JSON.stringify(JSON.parse(r.content[0].text)) === JSON.stringify(r.structuredContent), `${name}: text copy of structuredContent`);
  }
  return r;
}

let r = await call('run_code', { code: 'import sys; print(6*7); print("e", file=sys.stderr)' });
ok(!r.isError && r.structuredContent.stdout === '42\n' && r.structuredContent.exit_code === 0, 'run_code one-shot python', r);
r = await call('run_code', { language: 'shell', code: 'echo hi; exit 3' });
ok(r.structuredContent.stdout === 'hi\n' && r.structuredContent.exit_code === 3, 'run_code one-shot shell, exit status', r);

r = await call('create', { memory: '256m', timeout: '10h' });
ok(!r.isError && /^[0-9a-f]{12}$/.test(r.structuredContent.id), 'create', r);
ok(r.structuredContent.deadline_ms <= Date.now() + 21 * 60 * 1000, '--max-lifetime 20m caps a 10h lifetime', r.structuredContent);
const sb = r.structuredContent.id; saw(sb);
r = await call('write_file', { sandbox: sb, path: 'dir/hello.txt', content: 'hello from mcp\n' });
ok(!r.isError && r.structuredContent.size === 15, 'write_file', r);
r = await call('write_file', { sandbox: sb, path: 'bin.dat', content: Buffer.from([0, 255, 1]).toString('base64'), encoding: 'base64' });
ok(!r.isError && r.structuredContent.size === 3, 'write_file base64', r);
r = await call('read_file', { sandbox: sb, path: 'dir/hello.txt' });
ok(r.structuredContent.content === 'hello from mcp\n' && r.structuredContent.encoding === 'utf-8', 'read_file', r);
r = await call('read_file', { sandbox: sb, path: 'bin.dat' });
ok(r.structuredContent.encoding === 'base64' && Buffer.from(r.structuredContent.content, 'base64').equals(Buffer.from([0, 255, 1])), 'read_file binary comes as base64', r);
r = await call('read_file', { sandbox: sb, path: '../../etc/passwd' });
ok(r.isError && /\.\./.test(r.content[0].text) || r.isError, 'read_file ../ is refused (isError)', r);
r = await call('exec', { sandbox: sb, argv: ['cat', '/workspace/dir/hello.txt'] });
ok(r.structuredContent.stdout === 'hello from mcp\n', 'exec sees the file', r);
r = await call('exec', { sandbox: sb, argv: ['sh', '-c', 'read x; echo got $x; echo $FOO'], stdin: 'abc\n', env: { FOO: 'bar' } });
ok(r.structuredContent.stdout === 'got abc\nbar\n', 'exec with stdin and env', r);
r = await call('exec', { sandbox: sb, argv: ['sh', '-c', 'echo s1; echo s2 >&2'], stream: true });
ok(!r.isError && r.structuredContent.stdout === 's1\n' && r.structuredContent.stderr === 's2\n', 'exec with "stream": true (an HTTP member) gives the plain result over MCP', r);
r = await call('run_code', { sandbox: sb, code: 'open("/workspace/out.csv","w").write("a,b\\n")' });
ok(r.structuredContent.exit_code === 0, 'run_code in the sandbox', r);
r = await call('list_files', { sandbox: sb });
ok(r.structuredContent.files.map((f) => f.path).sort().join() === 'bin.dat,dir/hello.txt,out.csv', 'list_files', r);
r = await call('artifacts', { sandbox: sb, globs: ['*.csv'] });
ok(r.structuredContent.artifacts.length === 1 && r.structuredContent.artifacts[0].sha256.length === 64, 'artifacts', r);
r = await call('snapshot', { sandbox: sb });
const snap = r.structuredContent.snapshot;
ok(!r.isError && /^[0-9a-f]{64}$/.test(snap), 'snapshot', r);
await call('exec', { sandbox: sb, argv: ['rm', '/workspace/out.csv'] });
r = await call('restore', { sandbox: sb, snapshot: snap });
ok(!r.isError && r.structuredContent.restored, 'restore', r);
r = await call('read_file', { sandbox: sb, path: 'out.csv' });
ok(r.structuredContent.content === 'a,b\n', 'restore brought the file back', r);
r = await call('fork', { sandbox: sb });
ok(!r.isError && r.structuredContent.id !== sb, 'fork', r);
const copy = r.structuredContent.id; saw(copy);
r = await call('read_file', { sandbox: copy, path: 'out.csv' });
ok(r.structuredContent.content === 'a,b\n', 'the fork has the workspace', r);
r = await call('ls', {});
ok(r.structuredContent.sandboxes.map((s) => s.id).sort().join() === [sb, copy].sort().join(), 'ls lists what this client made', r);
r = await call('inspect', { sandbox: sb });
ok(r.structuredContent.id === sb && r.structuredContent.status === 'running', 'inspect', r);
r = await call('session_start', { sandbox: sb, kind: 'python' });
ok(!r.isError && r.structuredContent.session, 'session_start', r);
const sess = r.structuredContent.session;
r = await call('session_run', { sandbox: sb, session: sess, code: 'x = 41' });
r = await call('session_run', { sandbox: sb, session: sess, code: 'x + 1' });
ok(!r.isError && r.structuredContent.value?.repr === '42', 'session_run keeps globals and returns the value', r);
r = await call('session_stop', { sandbox: sb, session: sess });
ok(!r.isError && r.structuredContent.stopped === true, 'session_stop', r);
r = await call('network', { sandbox: sb });
ok(!r.isError && r.structuredContent.mode === 'none' && r.structuredContent.counters === null, 'network: a default sandbox has none', r);
r = await call('extend', { sandbox: sb, by: '1m' });
ok(r.isError && /max|lifetime/.test(r.content[0].text), 'extend past --max-lifetime 20m is refused (isError)', r);
r = await call('create', { network: 'allowlist', allow: ['192.0.2.0/24:443'], timeout: '5m' });
ok(!r.isError, 'create with network allowlist', r);
const nsb = r.structuredContent.id; saw(nsb);
r = await call('network', { sandbox: nsb });
ok(!r.isError && r.structuredContent.mode === 'allowlist' && r.structuredContent.allow.join() === '192.0.2.0/24:443', 'network: the allowlist', r);
r = await call('network_change', { sandbox: nsb, allow: ['198.51.100.7:80'] });
ok(!r.isError && r.structuredContent.allow.length === 2, 'network_change adds an entry', r);
r = await call('network_change', { sandbox: nsb });
ok(r.isError && /mode|allow|deny/.test(r.content[0].text), 'network_change with nothing to change: isError', r);
const dl = (await call('ls', {})).structuredContent.sandboxes.find((x) => x.id === nsb).deadline_ms;
r = await call('extend', { sandbox: nsb, by: '1m' });
ok(!r.isError && r.structuredContent.deadline_ms === dl + 60000, 'extend', { dl, r });
r = await call('audit', { sandbox: nsb });
ok(!r.isError && r.structuredContent.records.some((x) => x.op === 'network_change') && r.structuredContent.records.every((x) => x.sandbox === nsb || x.child === nsb || x.parent === nsb), 'audit: the sandbox\'s records', r);
r = await call('audit', {});
ok(!r.isError && r.structuredContent.records.every((x) => [sb, copy, nsb].includes(x.sandbox) || [sb, copy, nsb].includes(x.child) || [sb, copy, nsb].includes(x.parent)), 'audit: only this client\'s sandboxes', r);
r = await call('destroy', { sandbox: nsb });
ok(!r.isError, 'destroy the allowlist sandbox', r);
// a sandbox that expires on its own: its slot is freed at the next create, its audit stays readable
r = await call('create', { timeout: '2s' });
const eid = r.structuredContent.id; saw(eid);
await until(() => !storeList().some((x) => x.id === eid && x.status === 'running'), 'the 2s sandbox expired');
r = await call('create', {});
ok(!r.isError, 'a create after the expiry', r);
const after = r.structuredContent.id; saw(after);
await call('destroy', { sandbox: after });
r = await call('audit', { sandbox: eid });
ok(!r.isError && r.structuredContent.records.some((x) => x.op === 'create' && x.sandbox === eid), 'audit of a sandbox that expired and was pruned', r);
r = await call('events', { sandbox: sb });
ok(r.structuredContent.events.some((e) => e.type === 'exec'), 'events', r);

// errors: tool results with isError, JSON-RPC errors for protocol faults
r = await call('exec', { sandbox: sb });
ok(r.isError && /argv/.test(r.content[0].text), 'missing required argument: isError naming it', r);
r = await call('exec', { sandbox: sb, argv: ['true'], bogus: 1 });
ok(r.isError && /bogus/.test(r.content[0].text), 'unknown argument: isError naming it', r);
r = await call('inspect', { sandbox: 'nosuchsandbox' });
ok(r.isError, 'no such sandbox: isError', r);
let threw = null;
try { await client.callTool({ name: 'no_such_tool', arguments: {} }); } catch (e) { threw = e; }
ok(threw && threw.code === -32602, 'unknown tool: JSON-RPC error -32602', threw && threw.message);

// progress notifications for a long call
const progress = [];
r = await call('exec', { sandbox: sb, argv: ['sleep', '2.5'] }, { onprogress: (p) => progress.push(p), timeout: 60000 });
ok(!r.isError && progress.length >= 1 && progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), 'progress notifications, increasing', progress);

// a cancelled call: its process tree is killed, the sandbox lives on
const ac = new AbortController();
const pending = call('exec', { sandbox: sb, argv: ['sh', '-c', 'echo $$ > /workspace/sleeper.pid; exec sleep 600'] }, { signal: ac.signal, timeout: 600000 });
await until(async () => !(await call('read_file', { sandbox: sb, path: 'sleeper.pid' })).isError, 'the call to cancel started');
ac.abort('test cancels');
let cancelled = null;
try { await pending; } catch (e) { cancelled = e; }
ok(cancelled !== null, 'cancelled call rejects on the client', cancelled && String(cancelled));
await until(async () => (await call('exec', { sandbox: sb, argv: ['sh', '-c', 'kill -0 $(cat /workspace/sleeper.pid)'] })).structuredContent.exit_code !== 0,
            'the cancelled command was killed');
r = await call('exec', { sandbox: sb, argv: ['echo', 'alive'] });
ok(r.structuredContent.stdout === 'alive\n', 'the sandbox lives after the cancel', r);

// --max-sandboxes 4: 2 live; two more fit, the fifth is refused
const extra = [];
for (let i = 0; i < 2; i++) { r = await call('create', {}); ok(!r.isError, `create ${i + 3} of 4`, r); extra.push(r.structuredContent.id); saw(r.structuredContent.id); }
r = await call('create', {});
ok(r.isError && /max-sandboxes/.test(r.content[0].text), '--max-sandboxes cap refuses the fifth', r);
r = await call('destroy', { sandbox: extra[0] });
ok(!r.isError && r.structuredContent.destroyed, 'destroy', r);
ok(!storeList().some((s) => s.id === extra[0]), 'destroyed sandbox is gone from the store');

await client.close();
await until(() => storeList().length === 0, 'client close destroys every sandbox it made');
ok(true, 'nothing left after the SDK client went away');

// ---- raw stdio: malformed messages, disconnect mid-call, SIGKILL ------------------------
function rawServer(extraArgs = []) {
  const p = spawn(bin, ['--root', root, 'mcp', '--quiet', ...extraArgs], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = '';
  const lines = [];
  const waiters = [];
  p.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { lines.push(JSON.parse(buf.slice(0, i))); buf = buf.slice(i + 1); waiters.splice(0).forEach((w) => w()); }
  });
  const send = (o) => p.stdin.write((typeof o === 'string' ? o : JSON.stringify(o)) + '\n');
  const next = async (pred) => {
    for (;;) {
      const i = lines.findIndex(pred);
      if (i >= 0) return lines.splice(i, 1)[0];
      await new Promise((res) => waiters.push(res));
    }
  };
  const exited = new Promise((res) => p.on('exit', (code, sig) => res({ code, sig })));
  return { p, send, next, exited };
}
const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
{
  const s = rawServer();
  s.send(init);
  let m = await s.next((x) => x.id === 1);
  ok(m.result.protocolVersion === '2025-03-26', 'negotiates 2025-03-26 for an older client', m);
  s.send({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2024-01-01' } });
  m = await s.next((x) => x.id === 2);
  ok(m.result.protocolVersion === '2025-11-25', 'offers 2025-11-25 for an unknown revision', m);
  s.send('{"jsonrpc":"2.0","id":3,"method":');
  m = await s.next((x) => x.error && x.error.code === -32700);
  ok(m.id === null, 'malformed JSON: -32700 with id null', m);
  s.send({ jsonrpc: '1.0', id: 4, method: 'ping' });
  m = await s.next((x) => x.id === 4);
  ok(m.error.code === -32600, 'not JSON-RPC 2.0: -32600', m);
  s.send({ jsonrpc: '2.0', id: 5, method: 'resources/list' });
  m = await s.next((x) => x.id === 5);
  ok(m.error.code === -32601, 'unknown method: -32601', m);
  s.send([{ jsonrpc: '2.0', id: 6, method: 'ping' }]);
  m = await s.next((x) => x.error && x.error.code === -32600);
  ok(true, 'a batch is refused: -32600');
  // disconnect mid-call: a sandbox and a running exec, then stdin closes
  s.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'create', arguments: {} } });
  m = await s.next((x) => x.id === 7);
  const id = m.result.structuredContent.id; saw(id);
  s.send({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'exec', arguments: { sandbox: id, argv: ['sleep', '600'] } } });
  await sleep(500);
  s.p.stdin.end();
  const ex = await s.exited;
  ok(ex.code === 0, 'stdin EOF mid-call: the server exits', ex);
  ok(!storeList().some((x) => x.id === id), 'stdin EOF mid-call: its sandbox is destroyed');
}
{
  const s = rawServer(['--allow-tools', 'run_code,ls']);
  s.send(init);
  await s.next((x) => x.id === 1);
  s.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  const m = await s.next((x) => x.id === 2);
  ok(m.result.tools.map((t) => t.name).join() === 'run_code,ls', '--allow-tools limits tools/list', m);
  s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'create', arguments: {} } });
  const m3 = await s.next((x) => x.id === 3);
  ok(m3.error && m3.error.code === -32602, '--allow-tools refuses another tool', m3);
  s.p.kill('SIGTERM');
  const ex2 = await s.exited; ok(ex2.code === 0, 'SIGTERM: the server exits cleanly', ex2);
}
{
  // SIGKILL of the server: each sandbox's monitor sees its owner die and destroys it
  const s = rawServer();
  s.send(init);
  await s.next((x) => x.id === 1);
  s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'create', arguments: {} } });
  const m = await s.next((x) => x.id === 2);
  const id = m.result.structuredContent.id; saw(id);
  ok(storeList().some((x) => x.id === id), 'the sandbox lives while the server does');
  s.p.kill('SIGKILL');
  await s.exited;
  await until(() => !storeList().some((x) => x.id === id && x.status === 'running'), 'after SIGKILL of the server its sandbox is torn down by its monitor');
  ok(true, 'SIGKILL: nothing of the server left running');
}
console.log(`1..${n}`);
process.exit(0);
