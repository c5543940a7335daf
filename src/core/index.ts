export * from './errors.js';
export * from './rect.js';
export * from './pixel-type.js';
export * from './pixel-block.js';
