import type { CoreDeps } from '../../platform/core.js';
import { createFileStore } from '../../platform/file-store.js';
import type { Module } from '../../platform/module.js';
import { supportRoutes } from './routes.js';
import { createSupportService } from './service.js';

/** Support tickets with messages and attachments (under <state>/support/), operator replies. */
export function buildSupportModule(core: CoreDeps) {
  const service = createSupportService({ ...core, files: createFileStore(core.config.paths.state, 'support') });
  const module: Module = {
    name: 'support',
    routes: supportRoutes(service, {
      maxAttachmentBytes: core.config.support.max_attachment_bytes,
      perMessage: core.config.support.max_attachments_per_message,
    }),
  };
  return { module, service };
}
