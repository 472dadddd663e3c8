// Shared setup of the end-to-end scenarios: an OpenAI client pointed at the
// proxy (OPENAI_BASE_URL) and a way to hand results back to the Go test.
import OpenAI from 'openai';

export const client = new OpenAI({
  baseURL: process.env.OPENAI_BASE_URL,
  apiKey: process.env.OPENAI_API_KEY ?? 'sk-e2e',
  maxRetries: 0,
  timeout: 30_000,
});

export const model = 'fake-model';

// report prints the scenario's observations as one JSON line for the Go test.
export function report(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

// headersOf keeps the X-Skillrouter-* response headers.
export function headersOf(response) {
  const out = {};
  for (const [k, v] of response.headers.entries()) {
    if (k.startsWith('x-skillrouter-')) out[k] = v;
  }
  return out;
}
