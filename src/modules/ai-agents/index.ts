import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { createAgentCalls } from './calls.js';
import { createChatProvider, createSpeechProvider, createTranscriptionProvider } from './providers.js';
import { aiAgentsRoutes } from './routes.js';
import { createAiAgentsService } from './service.js';

/** AI voice agents: records, voices and previews, drafts, one-turn simulations and conversations on calls over the `[ai]` providers. */
export function buildAiAgentsModule(core: CoreDeps) {
  const ai = core.config.ai;
  const timeoutMs = ai.request_timeout_ms;
  const chat = ai.chat_url ? createChatProvider({ url: ai.chat_url, apiKey: ai.chat_api_key, timeoutMs }) : null;
  const speech = ai.tts_url
    ? createSpeechProvider({ url: ai.tts_url, apiKey: ai.tts_api_key, timeoutMs, model: ai.tts_model })
    : null;
  const stt = ai.stt_url
    ? createTranscriptionProvider({ url: ai.stt_url, apiKey: ai.stt_api_key, timeoutMs, model: ai.stt_model })
    : null;
  const service = createAiAgentsService({ sql: core.sql, clock: core.clock, config: core.config, chat, speech });
  const module: Module = { name: 'ai-agents', routes: aiAgentsRoutes(service) };
  // Agents holding calls: the call plane hands answered calls named with an agent to `calls`.
  const calls = createAgentCalls({
    ...core,
    log: core.log.child({ module: 'ai-agents' }),
    chat,
    stt,
    speech,
  });
  // The chat model is shared with the dialer's assistant (POST /dialer/agent/ask).
  return { module, service, chat, calls };
}
