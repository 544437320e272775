#!/usr/bin/env node
import { main } from '../main.js';

process.exitCode = await main(process.argv.slice(2), process.env);
// Stray handles (a slow peer socket) must not keep a stopped daemon alive.
if (process.exitCode !== undefined) setTimeout(() => process.exit(), 2000).unref();
