// Shared setup of the real-client scripts (responses.mjs, anthropic.mjs,
// vercel-ai.mjs, langchain.mjs): where to send requests, the client tool they
// all offer, and how to hand results back to the Go test.
//
// BASE_URL is the server's root (a fake upstream or the proxy): the OpenAI
// clients use BASE_URL/v1, the Anthropic client BASE_URL itself (it adds
// /v1/messages). API_KEY defaults to a dummy key. MODEL defaults to fake-model.
import assert from 'node:assert/strict';

export const base = process.env.BASE_URL;
assert.ok(base, 'BASE_URL must be set');
export const apiKey = process.env.API_KEY ?? 'sk-e2e-client';
export const model = process.env.MODEL ?? 'fake-model';

// args returns the script's <case> <mode> arguments, checked against the
// ones it knows.
export function args(cases, modes) {
  const [c, m = modes[0]] = process.argv.slice(2);
  if (!cases.includes(c) || !modes.includes(m)) {
    process.stderr.write(`usage: node ${process.argv[1]} <${cases.join('|')}> [${modes.join('|')}]\n`);
    process.exit(2);
  }
  return [c, m];
}

// The client tool every script offers: the model may call it, the client
// runs it locally.
export const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

export function weather(input) {
  const { city } = typeof input === 'string' ? JSON.parse(input || '{}') : input;
  return JSON.stringify({ city, sky: 'sunny', celsius: 21 });
}

export const question = 'What is the weather in Oslo?';

// headersOf keeps the headers a test asserts on: X-Skillrouter-* and the
// request id.
export function headersOf(headers) {
  const out = {};
  if (!headers) return out;
  for (const [k, v] of headers.entries()) {
    if (k.startsWith('x-skillrouter-') || k === 'x-request-id' || k === 'request-id') out[k] = v;
  }
  return out;
}

// report prints the observations as one JSON line for the Go test.
export function report(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}
