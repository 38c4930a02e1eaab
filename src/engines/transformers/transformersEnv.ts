import { env, LogLevel } from "@huggingface/transformers";

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
    // Warnings such as "No language specified - defaulting to English" go to stderr per request otherwise.
    env.logLevel = LogLevel.ERROR;
    configured = true;
  }
  return env;
}
