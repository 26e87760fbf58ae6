// tests/mcp/mcp_http_client.mjs — the official MCP TypeScript SDK client over
// the Streamable HTTP transport of `agentnest serve` (POST /mcp, bearer
// token): initialize, tools/list with schemas, run_code, create / write_file
// / exec / read_file / destroy, an unknown tool, a missing token refused,
// another token's sandbox refused, and SIGTERM of the server destroying what
// was made.  Run by tests/integration/mcp_test.c:
//   node mcp_http_client.mjs AGENTNEST STORE WORKDIR PORT
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawn, execFileSync } from 'node:child_process';
import { writeFileSync, chmodSync, openSync } from 'node:fs';

const [bin, root, work, port] = process.argv.slice(2);
let n = 0;
function ok(cond, what, detail) {
  n++;
  if (!cond) { console.log(`not ok ${n} - ${what}${detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 1500) : ''}`); process.exit(1); }
  console.log(`ok ${n} - ${what}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const storeList = () => JSON.parse(execFileSync(bin, ['--root', root, 'ls', '--json'], { encoding: 'utf8' }));
const T = { a: 'mcp-a-0123456789abcdef', b: 'mcp-b-0123456789abcdef' };
writeFileSync(`${work}/mcp-tokens`, `${T.a} a\n${T.b} b\n`);
chmodSync(`${work}/mcp-tokens`, 0o600);
const log = openSync(`${work}/mcp-serve.log`, 'a');
const srv = spawn(bin, ['--root', root, 'serve', '--tokens', `${work}/mcp-tokens`, '--listen', `127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', log] });
const exited = new Promise((res) => srv.on('exit', (code, sig) => res({ code, sig })));
const url = new URL(`http://127.0.0.1:${port}/mcp`);
async function connect(token) {
  const c = new Client({ name: 'agentnest-http-test', version: '1.0.0' });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  await c.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return c;
}
let client;
for (let i = 0; i < 50 && !client; i++) { try { client = await connect(T.a); } catch { await sleep(100); } }
ok(client && client.getServerVersion()?.name === 'agentnest', 'initialize over Streamable HTTP');
const { tools } = await client.listTools();
ok(tools.length >= 14 && tools.every((t) => t.inputSchema && t.outputSchema), 'tools/list with input and output schemas');
let r = await client.callTool({ name: 'run_code', arguments: { code: 'print(6*7)' } });
ok(!r.isError && r.structuredContent.stdout === '42\n', 'run_code', r);
r = await client.callTool({ name: 'create', arguments: {} });
ok(!r.isError, 'create', r);
const id = r.structuredContent.id;
console.log(`SANDBOX ${id}`);
r = await client.callTool({ name: 'write_file', arguments: { sandbox: id, path: 'x.py', content: 'print("from file")\n' } });
ok(!r.isError, 'write_file', r);
r = await client.callTool({ name: 'exec', arguments: { sandbox: id, argv: ['python3', '/workspace/x.py'] } });
ok(r.structuredContent.stdout === 'from file\n', 'exec', r);
r = await client.callTool({ name: 'read_file', arguments: { sandbox: id, path: 'x.py' } });
ok(r.structuredContent.content === 'print("from file")\n', 'read_file', r);
let threw = null;
try { await client.callTool({ name: 'nope', arguments: {} }); } catch (e) { threw = e; }
ok(threw && threw.code === -32602, 'unknown tool: -32602', String(threw));
threw = null;
try { await connect(null); } catch (e) { threw = e; }
ok(threw && /401/.test(String(threw)), 'no token: refused (401)', String(threw));
const other = await connect(T.b);
r = await other.callTool({ name: 'inspect', arguments: { sandbox: id } });
ok(r.isError && /no such sandbox/.test(r.content[0].text), "another token's sandbox: isError, as an unknown one", r);
r = await other.callTool({ name: 'ls', arguments: {} });
ok(r.structuredContent.sandboxes.length === 0, 'ls shows another token nothing');
r = await client.callTool({ name: 'create', arguments: {} });
const id2 = r.structuredContent.id;
console.log(`SANDBOX ${id2}`);
r = await client.callTool({ name: 'destroy', arguments: { sandbox: id } });
ok(!r.isError && !storeList().some((s) => s.id === id), 'destroy', r);
ok(storeList().some((s) => s.id === id2), 'the second sandbox lives');
srv.kill('SIGTERM');
const ex = await exited;
ok(ex.code === 0 && !storeList().some((s) => s.id === id2), 'SIGTERM of serve destroys what /mcp made', ex);
console.log(`1..${n}`);
process.exit(0);
