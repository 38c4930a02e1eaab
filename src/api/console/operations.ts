import { z } from "zod";
import { defineApiGroup } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const consoleApi = defineApiGroup({
  tag: "Admin accounts",
  description:
    "Node-wide administration behind the web console: every account with its balances, credit grants, usage per day and model. The node operator's keys only (`hearth keys create --operator`); an account admin key gets 403.",
  schemas,
  operations: [
    {
      method: "get",
      path: "/admin/accounts",
      operationId: "listAccounts",
      summary: "Every account of the node with its balances and key counts",
      access: "adminKey",
      query: schemas.AdminAccountsQuery,
      responses: { 200: { description: "The accounts, newest first", content: { "application/json": schemas.AdminAccountsResponse } } },
      errors: { 403: "Not the node operator's key (an inference key, or an account admin key: those manage their own account only)" },
    },
    {
      method: "post",
      path: "/admin/accounts/{id}/credits",
      operationId: "grantAccountCredits",
      summary: "Grant credits to an account (a ledger entry recording the granting key); the operator only",
      description:
        "Only the node operator creates money: account admin keys, including every admin key made through POST /api_keys, get 403. The amount must be positive; credit is never taken back through this endpoint (a negative or zero amount is a 400 naming `amount`).",
      access: "adminKey",
      params: z.object({ id: z.string() }),
      body: { content: { "application/json": schemas.GrantCreditsRequest } },
      responses: { 200: { description: "The account after the grant", content: { "application/json": schemas.GrantCreditsResponse } } },
      errors: { 403: "Not the node operator's key (an inference key, or an account admin key: those manage their own account only)", 404: "No such account" },
    },
    {
      method: "get",
      path: "/admin/usage",
      operationId: "getNodeUsage",
      summary: "Requests, tokens and spend per UTC day and model, over the whole node",
      access: "adminKey",
      query: schemas.AdminUsageQuery,
      responses: { 200: { description: "Usage per day and model", content: { "application/json": schemas.AdminUsageResponse } } },
      errors: { 403: "Not the node operator's key (an inference key, or an account admin key: those manage their own account only)" },
    },
  ],
});
