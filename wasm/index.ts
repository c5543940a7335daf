// The module's exports: every kernel family's row functions (one module, one memory).
export * from './terrain';
export * from './focal';
export * from './local';
export * from './reader';
export * from './stats';
