-- The request mix of load.sh: 60 % cart reads, 25 % cart additions, 10 % prices (the backend
-- pool), 5 % checkouts, spread over 1,000 users and 50 items.
math.randomseed(42)

request = function()
    local user = "u" .. math.random(1, 1000)
    local draw = math.random(100)
    if draw <= 60 then
        return wrk.format("GET", "/users/" .. user .. "/cart")
    elseif draw <= 85 then
        return wrk.format("POST", "/users/" .. user .. "/cart/item" .. math.random(1, 50))
    elseif draw <= 95 then
        return wrk.format("GET", "/prices/item" .. math.random(1, 50))
    else
        return wrk.format("POST", "/users/" .. user .. "/checkout")
    end
end

done = function(summary, latency, requests)
    local errors = summary.errors
    io.write(string.format("wrk: %d requests in %.1f s, %.0f requests/s\n", summary.requests,
        summary.duration / 1e6, summary.requests / (summary.duration / 1e6)))
    io.write(string.format("latency: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n",
        latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
        latency:percentile(99.9) / 1000, latency.max / 1000))
    io.write(string.format("errors: connect %d, read %d, write %d, timeout %d, non-2xx/3xx %d\n",
        errors.connect, errors.read, errors.write, errors.timeout, errors.status))
end
