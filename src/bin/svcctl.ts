#!/usr/bin/env node
import { svcctl } from '../cli/svcctl.js';

process.exitCode = await svcctl(process.argv.slice(2), process.env);
