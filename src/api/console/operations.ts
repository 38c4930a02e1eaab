import { z } from "zod";
import { defineApiGroup } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const consoleApi = defineApiGroup({
  tag: "Admin accounts",
  description: "Node-wide administration behind the web console: every account with its balances, credit grants, usage per day and model. Admin keys only.",
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
    },
    {
      method: "post",
      path: "/admin/accounts/{id}/credits",
      operationId: "grantAccountCredits",
      summary: "Grant credits to an account (a ledger entry)",
      access: "adminKey",
      params: z.object({ id: z.string() }),
      body: { content: { "application/json": schemas.GrantCreditsRequest } },
      responses: { 200: { description: "The account after the grant", content: { "application/json": schemas.GrantCreditsResponse } } },
      errors: { 404: "No such account" },
    },
    {
      method: "get",
      path: "/admin/usage",
      operationId: "getNodeUsage",
      summary: "Requests, tokens and spend per UTC day and model, over the whole node",
      access: "adminKey",
      query: schemas.AdminUsageQuery,
      responses: { 200: { description: "Usage per day and model", content: { "application/json": schemas.AdminUsageResponse } } },
    },
  ],
});
