// A streamed chat completion, read both raw and through the SDK's stream helper.
import assert from 'node:assert/strict';
import { client, model, report, headersOf } from './lib.mjs';

const messages = [{ role: 'user', content: 'Summarise this CSV file into a report: a,b\n1,2' }];

// Raw iteration over chunks.
const { data: stream, response } = await client.chat.completions
  .create({ model, messages, stream: true, stream_options: { include_usage: true } })
  .withResponse();
let content = '';
let chunks = 0;
let usage = null;
const ids = new Set();
const finish = [];
for await (const chunk of stream) {
  chunks++;
  ids.add(chunk.id);
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    if (choice.delta?.content) content += choice.delta.content;
    if (choice.finish_reason) finish.push(choice.finish_reason);
  }
}
assert.equal(content, 'Here is the report you asked for.');
assert.deepEqual(finish, ['stop']);
assert.equal(ids.size, 1);
assert.ok(usage && usage.total_tokens > 0, 'usage chunk expected');

// The SDK's accumulating helper.
const helper = client.chat.completions.stream({ model, messages });
const final = await helper.finalChatCompletion();
assert.equal(final.choices[0].message.content, 'Here is the report you asked for.');

report({ content, chunks, usage, headers: headersOf(response), helperContent: final.choices[0].message.content });
