import { env } from "@huggingface/transformers";

let configured = false;

/**
 * transformers.js, offline: models are loaded from local directories given as absolute paths,
 * never from the hub, and nothing is cached inside node_modules. Idempotent.
 */
export function configureTransformers(): typeof env {
  if (!configured) {
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.useFSCache = false;
    env.useBrowserCache = false;
    configured = true;
  }
  return env;
}
