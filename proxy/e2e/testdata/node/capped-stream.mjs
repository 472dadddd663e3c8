// A capped stream that did not ask for usage: the model calls load_skill,
// the proxy asks the upstream for usage to keep the cap over both rounds,
// and the client reads a stream without usage, as it asked.
import assert from 'node:assert/strict';
import { client, model, report } from './lib.mjs';

const messages = [{ role: 'user', content: 'I need help with something about my data.' }];

const { data: stream } = await client.chat.completions
  .create({ model, messages, stream: true, max_tokens: 100 })
  .withResponse();
let content = '';
let chunks = 0;
let usageChunks = 0;
let emptyChoices = 0;
const finish = [];
for await (const chunk of stream) {
  chunks++;
  if ('usage' in chunk) usageChunks++;
  if (chunk.choices.length === 0) emptyChoices++;
  for (const choice of chunk.choices) {
    if (choice.delta?.content) content += choice.delta.content;
    if (choice.finish_reason) finish.push(choice.finish_reason);
  }
}
assert.equal(content, 'Let me load the skill. Loaded the csv-report skill; here is your report.');
assert.deepEqual(finish, ['stop']);

// The SDK's accumulating helper: no usage on the final completion either.
const helper = client.chat.completions.stream({ model, messages, max_completion_tokens: 100 });
const final = await helper.finalChatCompletion();
assert.equal(final.choices[0].message.content, 'Let me load the skill. Loaded the csv-report skill; here is your report.');

report({ chunks, usageChunks, emptyChoices, helperUsage: final.usage ?? null });
