// Copies what tsc does not emit (SQL migrations, data files) from src/ to dist/src/.
import { cpSync } from 'node:fs';

cpSync('src', 'dist/src', { recursive: true, filter: (path) => !path.endsWith('.ts') });
