import { isE164 } from '../../platform/e164.js';
import type { ChatMessage, ChatReply, ChatTool } from './providers.js';

/**
 * What one agent turn shares between a simulation (POST /ai-agents/{id}/simulate) and a call: the
 * system prompt, the tools offered to the model and how its tool calls read.
 */

/** Tools an agent may be given (spec "AI voice agents": end, transfer, capturing fields into `captured`). */
export const AGENT_TOOLS = ['end', 'transfer', 'capture'] as const;

export interface AgentPrompt {
  systemPrompt: string;
  guardrails: string | null;
  tools: string[];
  firstMessage: string | null;
}

/** What the model is told about each tool, as OpenAI-style function tools. */
const TOOL_SPECS: Record<(typeof AGENT_TOOLS)[number], ChatTool> = {
  end: {
    name: 'end_call',
    description: 'End the call politely once the conversation is over (say goodbye in your reply).',
    parameters: { type: 'object', properties: { reason: { type: 'string' } } },
  },
  transfer: {
    name: 'transfer_call',
    description: 'Transfer the caller to a human at the given E.164 number.',
    parameters: { type: 'object', properties: { number: { type: 'string' } }, required: ['number'] },
  },
  capture: {
    name: 'capture',
    description: 'Record facts the caller gave (for example name, email, appointment time) as string fields.',
    parameters: {
      type: 'object',
      properties: { fields: { type: 'object', additionalProperties: { type: 'string' } } },
      required: ['fields'],
    },
  },
};

export function systemFor(a: AgentPrompt): string {
  return [
    a.systemPrompt,
    a.guardrails ? `Rules you must always follow:\n${a.guardrails}` : '',
    'You are speaking on a phone call: answer in one to three short spoken sentences, no lists or markup.',
  ]
    .filter(Boolean)
    .join('\n\n');
}

export const toolsFor = (a: AgentPrompt): ChatTool[] =>
  a.tools.filter((t): t is (typeof AGENT_TOOLS)[number] => t in TOOL_SPECS).map((t) => TOOL_SPECS[t]);

/** The messages of a turn: system prompt, the opening line when the history has none, the history, the new message. */
export function turnMessages(
  a: AgentPrompt,
  history: readonly { role: 'user' | 'assistant'; content: string }[],
  message: string,
): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: systemFor(a) }];
  if (a.firstMessage && history.length === 0) messages.push({ role: 'assistant', content: a.firstMessage });
  for (const h of history) messages.push({ role: h.role, content: h.content });
  messages.push({ role: 'user', content: message });
  return messages;
}

export interface TurnAction {
  action: 'continue' | 'end' | 'transfer';
  transferTo: string | null;
  captured: Record<string, string>;
}

/** The model's tool calls as the agent acts on them; a tool it was not given, or a bad number, is ignored. */
export function readToolCalls(a: AgentPrompt, calls: ChatReply['toolCalls']): TurnAction {
  let action: TurnAction['action'] = 'continue';
  let transferTo: string | null = null;
  const captured: Record<string, string> = {};
  for (const call of calls) {
    if (call.name === 'end_call' && a.tools.includes('end')) {
      if (action === 'continue') action = 'end';
    } else if (call.name === 'transfer_call' && a.tools.includes('transfer')) {
      const n = call.arguments['number'];
      if (typeof n === 'string' && isE164(n)) {
        action = 'transfer';
        transferTo = n.startsWith('+') ? n : `+${n}`;
      }
    } else if (call.name === 'capture' && a.tools.includes('capture')) {
      const fields = call.arguments['fields'];
      if (typeof fields === 'object' && fields !== null) {
        for (const [k, v] of Object.entries(fields))
          if (typeof v === 'string' || typeof v === 'number') captured[k.slice(0, 64)] = String(v).slice(0, 500);
      }
    }
  }
  return { action, transferTo, captured };
}
