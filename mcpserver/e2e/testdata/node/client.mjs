// The official MCP TypeScript SDK as a client of skillrouter's MCP server.
// Usage: node client.mjs stdio <router binary> <skills dir> [exec]
//        node client.mjs http <http://host:port/mcp> <skills dir> [exec]
// It exercises every tool, resources, the Skills Extension, prompts and
// list_changed after a new skill folder appears; any failed check exits 1.
// The last stdout line is a JSON summary for the Go test.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResultSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [mode, target, skillsDir, exec] = process.argv.slice(2);
const transport = mode === 'stdio'
  ? new StdioClientTransport({
      command: target,
      args: ['mcp', '--skills', skillsDir, '--log-level', 'warn', ...(exec ? ['--exec', '--exec-timeout', '30s'] : [])],
      // A host's default environment, plus where the test keeps the
      // router's cache (its routing index) instead of the user's.
      env: {
        ...getDefaultEnvironment(),
        ...(process.env.SKILLROUTER_EMBEDDER_CACHE_DIR ? { SKILLROUTER_EMBEDDER_CACHE_DIR: process.env.SKILLROUTER_EMBEDDER_CACHE_DIR } : {}),
      },
      stderr: 'inherit',
    })
  : new StreamableHTTPClientTransport(new URL(target));

const client = new Client({ name: 'skillrouter-e2e', version: '1.0.0' });
const changed = { resources: 0, prompts: 0 };
let wake = () => {};
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => { changed.resources++; wake(); });
client.setNotificationHandler(PromptListChangedNotificationSchema, () => { changed.prompts++; wake(); });
await client.connect(transport);

// initialize
const caps = client.getServerCapabilities();
assert.deepEqual(caps.extensions?.['io.modelcontextprotocol/skills'], { directoryRead: true });
assert.equal(caps.resources?.listChanged, true);
assert.equal(caps.prompts?.listChanged, true);
assert.match(client.getInstructions(), /search_skills.*load_skill/s);

// tools
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const want = ['load_skill', 'read_skill_resource', 'search_skills', ...(exec ? ['skill_execute'] : [])].sort();
assert.deepEqual(tools, want);

const text = (r) => r.content.map((c) => c.text).join('');
const search = await client.callTool({ name: 'search_skills', arguments: { query: 'my postgres query is slow', limit: 3 } });
assert.equal(search.isError ?? false, false);
assert.equal(search.structuredContent.results[0].id, 'sql-tuning');
assert.equal(search.structuredContent.results[0].uri, 'skill://sql-tuning/SKILL.md');
assert.equal(JSON.parse(text(search)).results[0].id, 'sql-tuning');

const load = await client.callTool({ name: 'load_skill', arguments: { skill_id: 'sql-tuning' } });
assert.equal(load.isError ?? false, false);
assert.match(text(load), /^<skill_context id="sql-tuning">/);
const missing = await client.callTool({ name: 'load_skill', arguments: { skill_id: 'sql-tunin' } });
assert.equal(missing.isError, true);
assert.match(text(missing), /<did_you_mean>\s*<id>sql-tuning<\/id>/);

const read = await client.callTool({ name: 'read_skill_resource', arguments: { skill_id: 'sql-tuning', path: 'references/indexes.md' } });
assert.equal(read.isError ?? false, false);
assert.equal(JSON.parse(text(read)).content, 'B-tree, GIN, BRIN.\n');
const escape = await client.callTool({ name: 'read_skill_resource', arguments: { skill_id: 'sql-tuning', path: '../team/pdf-forms/SKILL.md' } });
assert.equal(escape.isError, true);
assert.match(text(escape), /path_outside_skill/);

if (exec) {
  const run = await client.callTool({ name: 'skill_execute', arguments: { skill_id: 'team/pdf-forms', command: 'scripts/fields.py', args: ['a.pdf'] } });
  assert.equal(run.isError ?? false, false, text(run));
  assert.match(JSON.parse(text(run)).stdout, /fields of \['a\.pdf'\]/);
}

// resources, paginated
const uris = [];
let cursor;
do {
  const page = await client.listResources(cursor ? { cursor } : {});
  uris.push(...page.resources.map((r) => r.uri));
  cursor = page.nextCursor;
} while (cursor);
assert.ok(uris.includes('skill://team/pdf-forms/references/acroform.md'), uris.join(' '));
const skillMd = await client.readResource({ uri: 'skill://sql-tuning/SKILL.md' });
const raw = readFileSync(join(skillsDir, 'sql-tuning', 'SKILL.md'));
assert.equal(skillMd.contents[0].text, raw.toString('utf8'));
assert.equal(skillMd.contents[0].mimeType, 'text/markdown');
const png = await client.readResource({ uri: 'skill://team/pdf-forms/references/logo.png' });
assert.deepEqual(Buffer.from(png.contents[0].blob, 'base64'), readFileSync(join(skillsDir, 'team/pdf-forms/references/logo.png')));
await assert.rejects(client.readResource({ uri: 'skill://sql-tuning/nope.md' }), (e) => e.code === -32602);

// the Skills Extension
const list = await client.request({ method: 'skills/list', params: {} }, ResultSchema);
assert.equal(list.resultType, 'complete');
const entry = list.skills.find((s) => s.uri === 'skill://sql-tuning/SKILL.md');
assert.deepEqual(entry.frontmatter, { name: 'sql-tuning', description: 'Diagnose and speed up slow SQL queries in PostgreSQL with EXPLAIN ANALYZE, indexes and query rewrites.' });
const md = entry.resources.find((r) => r.uri === entry.uri);
assert.equal(md.digest, 'sha256:' + createHash('sha256').update(raw).digest('hex'));
assert.equal(md.size, raw.length);
const got = await client.request({ method: 'skills/get', params: { uri: 'skill://team/pdf-forms/SKILL.md' } }, ResultSchema);
assert.equal(got.skill.frontmatter.metadata.updated, '2025-03-01');
await assert.rejects(client.request({ method: 'skills/get', params: { uri: 'skill://nope/SKILL.md' } }, ResultSchema), (e) => e.code === -32602);
const dir = await client.request({ method: 'resources/directory/read', params: { uri: 'skill://sql-tuning/references' } }, ResultSchema);
assert.deepEqual(dir.resources.map((r) => [r.name, r.mimeType]), [['deep', 'inode/directory'], ['indexes.md', 'text/markdown']]);

// prompts
const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
assert.ok(prompts.includes('team/pdf-forms'), prompts.join(' '));
const prompt = await client.getPrompt({ name: 'sql-tuning', arguments: { request: 'speed up my report query' } });
assert.equal(prompt.messages[0].role, 'user');
assert.equal(prompt.messages[0].content.text, text(load) + '\n\nspeed up my report query');

// list_changed after a new skill folder appears (the server watches the library)
const fresh = join(skillsDir, 'regex-builder');
mkdirSync(fresh, { recursive: true });
writeFileSync(join(fresh, 'SKILL.md'), '---\nname: regex-builder\ndescription: Build and test regular expressions.\n---\nUse anchors.\n');
const deadline = Date.now() + 30000;
while ((changed.resources === 0 || changed.prompts === 0) && Date.now() < deadline) {
  await new Promise((resolve) => { wake = resolve; setTimeout(resolve, 500); });
}
assert.ok(changed.resources > 0, 'no notifications/resources/list_changed');
assert.ok(changed.prompts > 0, 'no notifications/prompts/list_changed');
const after = await client.readResource({ uri: 'skill://regex-builder/SKILL.md' });
assert.match(after.contents[0].text, /regex-builder/);

await client.close();
console.log(JSON.stringify({ ok: true, mode, tools, resources: uris.length, skills: list.skills.length, prompts: prompts.length, changed }));
