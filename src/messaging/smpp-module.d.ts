// Types for the parts of the `smpp` package (farhadi/node-smpp, MIT) this folder uses; it ships none.
declare module 'smpp' {
  import type { EventEmitter } from 'node:events';
  import type { Socket } from 'node:net';
  import type { Server as NetServer } from 'node:net';

  export type PduOptions = Record<string, unknown>;

  export class PDU {
    constructor(command: string, options?: PduOptions);
    command: string;
    command_id: number;
    command_status: number;
    sequence_number: number;
    [field: string]: unknown;
    isResponse(): boolean;
    response(options?: PduOptions): PDU;
    toBuffer(): Buffer;
    static maxLength: number;
    static commandLength(stream: unknown): number | false;
  }

  export class Session extends EventEmitter {
    socket: Socket;
    send(pdu: PDU, responseCallback?: (pdu: PDU) => void, sendCallback?: (pdu: PDU) => void): boolean;
    close(callback?: () => void): void;
    destroy(callback?: () => void): void;
    pause(): void;
    resume(): void;
  }

  export interface SmppServer extends NetServer {
    sessions: Session[];
  }

  interface ParamDef {
    type: unknown;
    filter?: unknown;
  }

  interface Smpp {
    PDU: typeof PDU;
    Session: typeof Session;
    createServer(options: Record<string, unknown>, listener?: (session: Session) => void): SmppServer;
    connect(options: Record<string, unknown>, listener?: () => void): Session;
    errors: Record<string, number>;
    commands: Record<string, { id: number; params?: Record<string, ParamDef> }>;
    tlvs: Record<string, { id: number; filter?: unknown }>;
  }

  const smpp: Smpp;
  export default smpp;
}
