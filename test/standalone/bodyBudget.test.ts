import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/errors.js";
import { BodyBudget } from "../../src/http/bodyBudget.js";

describe("BodyBudget", () => {
  it("counts per caller and in all, and gives back once however often a body is released", () => {
    const budget = new BodyBudget(100);
    const a = budget.tryHold("a", 20);
    const b = budget.tryHold("b", 30);
    if (a instanceof ApiError || b instanceof ApiError) throw new Error("refused");
    expect([budget.held(), budget.held("a"), budget.held("b")]).toEqual([50, 20, 30]);
    a();
    a();
    expect([budget.held(), budget.held("a"), budget.held("b")]).toEqual([30, 0, 30]);
    b();
    expect(budget.held()).toBe(0);
  });

  it("refuses a caller past its quarter with a 429, and anyone past the whole with a 503", () => {
    const budget = new BodyBudget(100);
    expect(budget.tryHold("a", 20)).toBeTypeOf("function");
    expect((budget.tryHold("a", 6) as ApiError).status).toBe(429);
    expect(budget.tryHold("a", 5)).toBeTypeOf("function");
    expect(budget.tryHold("b", 25)).toBeTypeOf("function");
    expect(budget.tryHold("c", 25)).toBeTypeOf("function");
    expect((budget.tryHold("d", 26) as ApiError).status).toBe(503);
    expect(budget.tryHold("d", 25)).toBeTypeOf("function");
    expect((budget.tryHold("e", 1) as ApiError).status).toBe(503);
    expect(budget.held()).toBe(100);
  });
});
