// The model calls load_skill: the proxy answers it server-side and the client
// sees only the final answer, streaming and not.
import assert from 'node:assert/strict';
import { client, model, report, headersOf } from './lib.mjs';

const messages = [{ role: 'user', content: 'I need help with something about my data.' }];
const out = {};

const { data, response } = await client.chat.completions.create({ model, messages }).withResponse();
const m = data.choices[0].message;
assert.equal(m.content, 'Loaded the csv-report skill; here is your report.');
assert.equal(m.tool_calls, undefined, 'load_skill must not reach the client');
assert.equal(data.choices[0].finish_reason, 'stop');
out.plain = { content: m.content, usage: data.usage, headers: headersOf(response) };

const s = client.chat.completions.stream({ model, messages, stream_options: { include_usage: true } });
const deltas = [];
s.on('content', (delta) => deltas.push(delta));
const final = await s.finalChatCompletion();
const fm = final.choices[0].message;
assert.equal(fm.content, 'Let me load the skill. Loaded the csv-report skill; here is your report.');
assert.ok(!fm.tool_calls || fm.tool_calls.length === 0, 'load_skill deltas must be withheld');
assert.equal(final.choices[0].finish_reason, 'stop');
out.stream = { content: fm.content, deltas: deltas.length, usage: final.usage };
report(out);
