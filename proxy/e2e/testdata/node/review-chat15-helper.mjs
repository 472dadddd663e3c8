// Review chat15: chat.completions.stream() (the SDK's accumulating helper)
// through the proxy; prints the final message or the error the helper threw.
import { client, model, report } from './lib.mjs';

const messages = [{ role: 'user', content: 'Summarise this CSV file into a report: a,b\n1,2' }];
const helper = client.chat.completions.stream({ model, messages });
let content = '';
helper.on('content', (delta) => { content += delta; });
try {
  const final = await helper.finalChatCompletion();
  report({ ok: true, content, message: final.choices[0].message });
} catch (e) {
  report({ ok: false, content, error: String(e?.message ?? e) });
}
