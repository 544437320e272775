import type { FastifyReply } from 'fastify';

/**
 * Sends a stored upload back as an attachment: the type it was checked to be, never sniffed by the
 * browser, never cached by a shared cache.
 */
export function sendDownload(reply: FastifyReply, file: { contentType: string; fileName: string }, bytes: Buffer) {
  return reply
    .type(file.contentType)
    .header('content-disposition', `attachment; filename="${file.fileName}"`)
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'private, no-store')
    .send(bytes);
}
