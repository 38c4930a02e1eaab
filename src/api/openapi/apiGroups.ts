import { audioJobsApi } from "../audio/jobOperations.js";
import { audioApi } from "../audio/operations.js";
import { augmentApi } from "../augment/operations.js";
import { billingApi } from "../billing/operations.js";
import { adminApi } from "../admin/operations.js";
import { consoleApi } from "../console/operations.js";
import { charactersApi } from "../characters/operations.js";
import { chatApi } from "../chat/operations.js";
import { completionsApi } from "../completions/operations.js";
import { responsesApi } from "../responses/operations.js";
import { embeddingsApi } from "../embeddings/operations.js";
import { imagesApi } from "../images/operations.js";
import { upscaleApi } from "../images/upscaleOperations.js";
import { backgroundRemoveApi } from "../images/backgroundRemoveOperations.js";
import { editApi } from "../images/editOperations.js";
import { keysApi } from "../keys/operations.js";
import { modelsApi } from "../models/operations.js";
import { rpcApi } from "../rpc/operations.js";
import { videoApi } from "../video/operations.js";
import { x402Api } from "../x402/operations.js";
import type { ApiGroup } from "./Operation.js";
import { openapiApi } from "./operations.js";

/**
 * Every documented endpoint group, in the order of the reference's tags. A new group's
 * `operations.ts` is one line here (and its router one line in app.ts's ROUTERS);
 * test/e2e/openapi.test.ts fails, naming the method and path, for any route left out.
 */
export const API_GROUPS: readonly ApiGroup[] = [
  modelsApi,
  chatApi,
  completionsApi,
  responsesApi,
  charactersApi,
  audioApi,
  audioJobsApi,
  imagesApi,
  upscaleApi,
  backgroundRemoveApi,
  editApi,
  embeddingsApi,
  videoApi,
  billingApi,
  keysApi,
  x402Api,
  rpcApi,
  augmentApi,
  adminApi,
  consoleApi,
  openapiApi,
];
