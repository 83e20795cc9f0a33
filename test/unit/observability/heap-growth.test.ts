import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, tuneHeapGrowth } from '../../../src/observability/heap-growth.js';

describe('tuneHeapGrowth', () => {
  it('sets V8 heap growth unless the process was started with its own', () => {
    expect(HEAP_GROWING_PERCENT).toBeGreaterThan(0);
    expect(tuneHeapGrowth(['--heap-growing-percent=10'])).toBe(false);
    expect(tuneHeapGrowth(['--heap_growing_percent=10'])).toBe(false);
    expect(tuneHeapGrowth(['--max-old-space-size=512'])).toBe(true);
    expect(tuneHeapGrowth([])).toBe(true);
  });
});
