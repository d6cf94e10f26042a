// The release number of this build, in a module of its own so that the engine (the CBOM of
// src/engine/posture.ts names the tool that made it) and the entries can both import it.

/** The pqdb release this build belongs to. */
export const VERSION = '0.1.0';
