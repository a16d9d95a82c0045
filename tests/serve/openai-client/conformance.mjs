// Conformance of `fleetplan serve` with the official openai npm client.
// Usage: node conformance.mjs PORT MODEL. Exits 0 when every check passes.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const [port, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });

async function collect(stream, chat) {
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += chat ? (choice.delta?.content ?? '') : choice.text;
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, usage };
}

const base = { model, max_tokens: 20, seed: 7, ignore_eos: true };

// Completions, streamed and not: same tokens, counts, finish reason and usage.
const whole = await client.completions.create({ ...base, prompt: 'The KV cache' });
const streamed = await collect(
  await client.completions.create({ ...base, prompt: 'The KV cache', stream: true, stream_options: { include_usage: true } }),
  false);
assert.equal(streamed.text, whole.choices[0].text);
assert.equal(streamed.finish, whole.choices[0].finish_reason);
assert.deepEqual(streamed.usage, whole.usage);
assert.equal(whole.usage.completion_tokens, 20);

// Chat, streamed and not.
const messages = [{ role: 'user', content: 'Explain chunked prefill.' }];
const chatWhole = await client.chat.completions.create({ ...base, messages });
const chatStreamed = await collect(
  await client.chat.completions.create({ ...base, messages, stream: true, stream_options: { include_usage: true } }),
  true);
assert.equal(chatStreamed.text, chatWhole.choices[0].message.content);
assert.equal(chatStreamed.finish, 'length');
assert.deepEqual(chatStreamed.usage, chatWhole.usage);
assert.equal(chatWhole.choices[0].message.role, 'assistant');

// Stop strings are excluded from the text.
const words = whole.choices[0].text.split(' ').filter(Boolean);
const stop = ' ' + words[Math.floor(words.length / 2)];
const stopped = await client.completions.create({ ...base, prompt: 'The KV cache', stop: [stop] });
assert.equal(stopped.choices[0].text, whole.choices[0].text.slice(0, whole.choices[0].text.indexOf(stop)));
assert.equal(stopped.choices[0].finish_reason, 'stop');

// Errors arrive as the client's typed errors with OpenAI's fields.
await assert.rejects(client.completions.create({ ...base, prompt: 'x', n: 2 }), (e) => {
  assert.ok(e instanceof OpenAI.BadRequestError);
  assert.equal(e.status, 400);
  assert.equal(e.param, 'n');
  assert.equal(e.type, 'invalid_request_error');
  return true;
});
await assert.rejects(client.chat.completions.create({ ...base, model: 'no-such-model', messages }), (e) => {
  assert.ok(e instanceof OpenAI.NotFoundError);
  assert.equal(e.code, 'model_not_found');
  return true;
});

// Models.
const models = await client.models.list();
assert.ok(models.data.some((m) => m.id === model));

console.log('openai client conformance: ok');
