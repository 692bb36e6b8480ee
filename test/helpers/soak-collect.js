'use strict';
// Preloaded into a soaked process (SOAK_NODE_OPTIONS): on SIGUSR2 it runs a full garbage
// collection, so that the soak reads the memory the process keeps, not the garbage V8 has not
// collected yet (which comes and goes by tens of MB with the heap's size, whatever is kept).
const v8 = require('node:v8');
const vm = require('node:vm');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');
v8.setFlagsFromString('--no-expose-gc');
process.on('SIGUSR2', () => gc());
