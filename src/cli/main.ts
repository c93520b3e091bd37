#!/usr/bin/env node
process.stdout.write("usage: pi-storage <status|work|doctor|migrate> [--json] [--agent-dir DIR]\n")
