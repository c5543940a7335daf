// ESLint: typescript-eslint's type-checked recommendations over src, test and bench (the typecheck
// project test/tsconfig.json), with the exceptions this code base needs, each with its reason.
// `npm run lint` runs it and Prettier's check; CI runs `npm run lint`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'out/',
      'test-output/',
      'bench/data/',
      'golden/',
      'wasm/',
      'scripts/',
      'vendor/',
      'eslint.config.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './test/tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `const { statistics: _dropped, ...rest } = info` is how a field is left out of a copy.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // Coefficients are written with the digits their source publishes (Lanczos, Numerical
      // Recipes); the nearest double is the value meant.
      'no-loss-of-precision': 'off',
      // Async functions here implement Promise-returning interfaces (SourceNode.read, resolveSource,
      // ByteSource.close, async generators feeding writers) whether or not this one awaits.
      '@typescript-eslint/require-await': 'off',
      // Its generic-call check asks to move `as [number, number]` on proj4 results into type
      // arguments proj4 does not take, and its fix once removed a needed ErrnoException cast.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
    },
  },
  {
    // Tests reach into parsed JSON and library results whose types are `any` by nature.
    files: ['**/*.test.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
