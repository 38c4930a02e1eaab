import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import type { CharacterDefinition } from "../../src/characters/charactersFile.js";
import { insertCharacter } from "../../src/store/characters.js";
import { post, startTestServer, tinyChatEntry, tinyReasoningEntry, type TestServer } from "../helpers/testServer.js";

const PIRATE_PROMPT = "You are Captain Saltbeard, a pirate who answers every question in pirate speech and never breaks character.";
const characters = [
  {
    slug: "pirate",
    name: "Captain Saltbeard",
    description: "A pirate who talks like one",
    model: "tiny-reasoning",
    systemPrompt: PIRATE_PROMPT,
    exampleMessages: [
      { role: "user", content: "Hello" },
      { role: "assistant", content: "Ahoy, matey!" },
    ],
    tags: ["Pirate", "fun"],
    categories: ["roleplay"],
    featured: true,
    createdAt: "2025-01-02T00:00:00Z",
  },
  {
    slug: "tutor",
    name: "Math Tutor",
    description: "Patient algebra help",
    model: "tiny-chat",
    systemPrompt: "You are a patient math tutor.",
    tags: ["education"],
    categories: ["learning"],
    createdAt: "2025-03-01T00:00:00Z",
  },
  { slug: "noir", name: "Noir Narrator", model: "tiny-chat", systemPrompt: "You narrate like a noir film.", adult: true, tags: ["story"], createdAt: "2025-02-01T00:00:00Z" },
] satisfies z.input<typeof CharacterDefinition>[];

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ models: [tinyChatEntry({ systemPrompt: "You are the house assistant." }), tinyReasoningEntry()], characters });
  // One more, as an admin would add it with `hearth characters add`.
  insertCharacter(server.db, {
    slug: "chef",
    name: "Chef Remy",
    description: "Cooks",
    modelId: "tiny-chat",
    systemPrompt: "You are a chef.",
    exampleMessages: [],
    tags: ["food"],
    categories: ["lifestyle"],
    adult: false,
    featured: false,
    webEnabled: true,
    photoUrl: null,
    author: "admin",
  });
});
afterAll(() => server.stop());

const get = async (path: string, key: string | null = server.adminKey) => {
  const res = await fetch(`${server.baseUrl}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
};
const slugs = (body: { data: { slug: string }[] }) => body.data.map((c) => c.slug);

describe("GET /characters", () => {
  it("lists the file's and the admin's characters in the reference's record shape", async () => {
    const { status, body } = await get("/characters");
    expect(status).toBe(200);
    expect(body.object).toBe("list");
    expect(slugs(body).sort()).toEqual(["chef", "noir", "pirate", "tutor"]);
    const pirate = body.data.find((c: { slug: string }) => c.slug === "pirate");
    expect(pirate).toMatchObject({
      name: "Captain Saltbeard",
      description: "A pirate who talks like one",
      modelId: "tiny-reasoning",
      adult: false,
      featured: true,
      webEnabled: false,
      tags: ["Pirate", "fun"],
      shareUrl: null,
      photoUrl: null,
      createdAt: "2025-01-02T00:00:00.000Z",
      stats: { averageRating: 0, imports: 0, ratingCount: 0, ratingSum: 0, userRating: null },
    });
    expect(pirate.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(pirate.author).toMatch(/^[0-9a-z]{5}$/);
    // The persona stays on the server.
    expect(JSON.stringify(body)).not.toContain("Saltbeard, a pirate who answers");
  });

  it("filters by tags, categories, model, adult flag, web flag and search (with #tag)", async () => {
    expect(slugs((await get("/characters?tags=pirate")).body)).toEqual(["pirate"]);
    expect(slugs((await get("/characters?tags=food&tags=education")).body).sort()).toEqual(["chef", "tutor"]);
    expect(slugs((await get("/characters?categories=roleplay,learning")).body).sort()).toEqual(["pirate", "tutor"]);
    expect(slugs((await get("/characters?modelId=tiny-reasoning")).body)).toEqual(["pirate"]);
    expect(slugs((await get("/characters?isAdult=true")).body)).toEqual(["noir"]);
    expect(slugs((await get("/characters?isWebEnabled=true")).body)).toEqual(["chef"]);
    expect(slugs((await get("/characters?isPro=true")).body)).toEqual([]);
    expect(slugs((await get("/characters?search=algebra")).body)).toEqual(["tutor"]);
    expect(slugs((await get("/characters?search=%23story")).body)).toEqual(["noir"]);
  });

  it("sorts and paginates with limit and offset, reporting the pages in headers", async () => {
    const recent = await get("/characters?sortBy=mostRecent&sortOrder=asc");
    expect(slugs(recent.body).slice(0, 3)).toEqual(["pirate", "noir", "tutor"]);
    const page = await get("/characters?sortBy=mostRecent&sortOrder=asc&limit=2&offset=2");
    expect(slugs(page.body)).toEqual(["tutor", "chef"]);
    expect(page.headers.get("x-pagination-limit")).toBe("2");
    expect(page.headers.get("x-pagination-page")).toBe("2");
    expect(page.headers.get("x-pagination-total")).toBe("4");
    expect(page.headers.get("x-pagination-total-pages")).toBe("2");
    expect((await get("/characters?limit=0")).status).toBe(400);
    expect((await get("/characters?limit=101")).status).toBe(400);
  });

  it("GET /characters/{slug} returns one; an unknown slug is a 404; both need a key", async () => {
    const one = await get("/characters/tutor");
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ object: "character", data: { slug: "tutor", name: "Math Tutor", modelId: "tiny-chat" } });
    const missing = await get("/characters/nobody");
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatch(/nobody/);
    expect((await get("/characters", null)).status).toBe(401);
  });
});

describe("character reviews", () => {
  const send = (method: string, path: string, key: string, body?: unknown) =>
    fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it("one review per account, listed newest first in the provider's shape with paging, isOwner for the caller", async () => {
    const alice = server.createKey();
    const bob = server.createKey();
    const first = await send("POST", "/characters/tutor/reviews", alice.key, { rating: 5, message: "Patient and clear.", locale: "en" });
    expect(first.status).toBe(201);
    const written = (await first.json()) as { id: string; characterId: string };
    expect((await send("POST", "/characters/tutor/reviews", alice.key, { rating: 1 })).status).toBe(409);
    await new Promise((r) => setTimeout(r, 5));
    expect((await send("POST", "/characters/tutor/reviews", bob.key, { rating: 3 })).status).toBe(201);

    const page = await get("/characters/tutor/reviews?pageSize=1", alice.key);
    expect(page.status).toBe(200);
    expect(page.headers.get("x-pagination-total")).toBe("2");
    expect(page.headers.get("x-pagination-total-pages")).toBe("2");
    expect(page.body.object).toBe("list");
    expect(page.body.pagination).toEqual({ page: 1, pageSize: 1, total: 2, totalPages: 2 });
    // The summary covers every review, not only this page's: ratings 5 and 3.
    expect(page.body.summary).toEqual({ averageRating: 4, totalReviews: 2 });
    expect(page.body.data).toEqual([expect.objectContaining({ rating: 3, message: null, isOwner: false, username: "test account", userAvatarUrl: null })]);
    const second = await get("/characters/tutor/reviews?pageSize=1&page=2", alice.key);
    expect(second.body.data).toEqual([
      {
        characterId: written.characterId,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        id: written.id,
        isOwner: true,
        locale: "en",
        message: "Patient and clear.",
        rating: 5,
        userAvatarUrl: null,
        username: "test account",
      },
    ]);
    expect((await get("/characters/tutor/reviews")).body.data.every((r: { isOwner: boolean }) => !r.isOwner)).toBe(true);

    // The reviews are the catalog's ratings: stats (the caller's own rating included) and the rating orders.
    const one = await get("/characters/tutor", alice.key);
    expect(one.body.data.stats).toEqual({ averageRating: 4, imports: 0, ratingCount: 2, ratingSum: 8, userRating: 5 });
    expect((await get("/characters/tutor", bob.key)).body.data.stats.userRating).toBe(3);
    expect(slugs((await get("/characters?sortBy=highestRating")).body)[0]).toBe("tutor");
    expect(slugs((await get("/characters?sortBy=ratingCount&sortOrder=asc")).body).at(-1)).toBe("tutor");
  });

  it("bad ratings and unknown characters are refused; only the author or the operator deletes", async () => {
    const carol = server.createKey();
    const dave = server.createKey();
    for (const body of [{ rating: 0 }, { rating: 6 }, { rating: 2.5 }, {}, { rating: 4, extra: 1 }]) {
      const res = await send("POST", "/characters/chef/reviews", carol.key, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await send("POST", "/characters/nobody/reviews", carol.key, { rating: 4 })).status).toBe(404);
    expect((await get("/characters/nobody/reviews")).status).toBe(404);
    expect((await get("/characters/chef/reviews?pageSize=101")).status).toBe(400);

    const mine = (await (await send("POST", "/characters/chef/reviews", carol.key, { rating: 4 })).json()) as { id: string };
    const theirs = (await (await send("POST", "/characters/chef/reviews", dave.key, { rating: 2 })).json()) as { id: string };
    expect((await send("DELETE", `/characters/chef/reviews/${theirs.id}`, carol.key)).status).toBe(403);
    expect((await send("DELETE", `/characters/pirate/reviews/${mine.id}`, carol.key)).status).toBe(404);
    expect((await send("DELETE", `/characters/chef/reviews/${mine.id}`, carol.key)).status).toBe(200);
    expect((await send("DELETE", `/characters/chef/reviews/${theirs.id}`, server.adminKey)).status).toBe(200);
    expect((await get("/characters/chef/reviews")).body.pagination.total).toBe(0);
  });
});

describe("a character applied to a chat request", () => {
  const user = [{ role: "user", content: "What is the weather?" }];

  it("uses the character's model when the request names none, and echoes the slug", async () => {
    const res = await post(server, "/chat/completions", { messages: user, max_tokens: 3, service_parameters: { character_slug: "pirate" } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.model).toBe("tiny-reasoning");
    expect(res.headers.get("x-service-model-id")).toBe("tiny-reasoning");
    expect(body.service_parameters.character_slug).toBe("pirate");
  });

  it("renders exactly the persona: system prompt, then the example exchange, then the conversation", async () => {
    const withCharacter = (await (
      await post(server, "/chat/completions", { model: "tiny-chat", messages: user, max_tokens: 2, temperature: 0, service_parameters: { character_slug: "pirate" } })
    ).json()) as any;
    // The same conversation written out by hand reuses every cached token of the first.
    const byHand = (await (
      await post(server, "/chat/completions", {
        model: "tiny-chat",
        max_tokens: 2,
        temperature: 0,
        messages: [
          { role: "system", content: "You are the house assistant." },
          { role: "system", content: PIRATE_PROMPT },
          { role: "user", content: "Hello" },
          { role: "assistant", content: "Ahoy, matey!" },
          ...user,
        ],
        service_parameters: { include_service_system_prompt: false },
      })
    ).json()) as any;
    expect(byHand.usage.prompt_tokens).toBe(withCharacter.usage.prompt_tokens);
    expect(byHand.usage.prompt_tokens_details.cached_tokens).toBe(byHand.usage.prompt_tokens - 1);
    expect(byHand.choices[0].message.content).toBe(withCharacter.choices[0].message.content);
  });

  it("works from a model feature suffix and for admin-added characters", async () => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat:character_slug=chef", messages: user, max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).service_parameters.character_slug).toBe("chef");
  });

  it("an unknown slug is a 400 naming character_slug; no model and no character a 400 naming model", async () => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: user, service_parameters: { character_slug: "ghost" } });
    expect(res.status).toBe(400);
    const json = (await res.json()) as any;
    expect(json.details.service_parameters.character_slug._errors[0]).toMatch(/no character with slug "ghost"/);
    const viaSuffix = (await (await post(server, "/chat/completions", { model: "tiny-chat:character_slug=ghost", messages: user })).json()) as any;
    expect(viaSuffix.details.model.character_slug._errors[0]).toMatch(/ghost/);
    const noModel = await post(server, "/chat/completions", { messages: user });
    expect(noModel.status).toBe(400);
    expect(((await noModel.json()) as any).details.model._errors[0]).toMatch(/model is required/);
  });
});
