-- wrk script: POST /api/token with a distinct token on every request, the book's body.
-- Each wrk thread numbers its own requests; the thread id and the count make the 32-byte token unique,
-- and a per-run prefix (RUN env var) keeps runs apart in one database.
local counter = 0
local thread_id = 0
local run = os.getenv("RUN") or "0"
local threads = {}

function setup(thread)
    thread:set("id", #threads + 1)
    table.insert(threads, thread)
end

function init(args)
    thread_id = tonumber(wrk.thread:get("id")) or 0
end

function request()
    counter = counter + 1
    local token = string.format("%08x%08x%016x%032x", tonumber(run) or 0, thread_id, counter, 0)
    local body = '{"token": "' .. token .. '", "debug": true}'
    return wrk.format("POST", "/api/token", { ["Content-Type"] = "application/json" }, body)
end
