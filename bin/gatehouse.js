#!/usr/bin/env node
'use strict';
// The `gatehouse` command; the TypeScript sources are compiled to dist/ by `npm ci` (prepare).
require('../dist/src/cli.js');
