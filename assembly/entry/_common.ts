// Offsets every pqdb WebAssembly module exports: the IN and OUT regions the facades write and read,
// and whether the build uses SIMD. Re-exported by each module's entry file.

import { IN, IN_BYTES, OUT, OUT_BYTES } from '../common/layout';

export const MEM_IN: usize = IN;
export const MEM_IN_BYTES: usize = IN_BYTES;
export const MEM_OUT: usize = OUT;
export const MEM_OUT_BYTES: usize = OUT_BYTES;
/** 1 when this build uses WebAssembly SIMD (v128) instructions. */
export const SIMD: i32 = ASC_FEATURE_SIMD ? 1 : 0;
