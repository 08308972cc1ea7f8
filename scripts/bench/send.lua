-- wrk script: POST /api/send to one registered token on every request (a backend's transactional push).
-- TOKEN and SECRET come from the environment (scripts/bench-server.sh transactional sets them).
local token = os.getenv("TOKEN")
local secret = os.getenv("SECRET")
local body = '{"target": {"token": "' .. token .. '"}, "alert": {"title": "New message", "body": "Alice: lunch?"}}'

function request()
    return wrk.format("POST", "/api/send",
        { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. secret }, body)
end
