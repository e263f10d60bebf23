%% Troupe's peer benchmarks for Erlang/OTP: the workloads of troupe-bench written with plain
%% processes and messages. Built and run by Benchmarks/peers/run.sh:
%%
%%   erl -noshell +S 2:2 -pa DIR -run peers main version
%%       prints `version Erlang OTP-<release> erts-<version>`
%%   erl -noshell +S 2:2 -pa DIR -run peers main <Workload> <size>
%%       runs one workload and prints
%%       `peer Erlang <Workload> <units> <seconds> <check> <expected>`
%%
%% One workload per VM. As troupe-bench does, a throughput workload first runs once unreported at
%% 1/100 of its size (Fibonacci: n - 8), then once measured. Diagnostics go to stderr; a wrong
%% result halts with status 1. The driver is the process `-run` starts; times are
%% erlang:monotonic_time. Each workload returns {Units, Seconds, Check, Expected}.
-module(peers).
-export([main/1]).

-define(RING_ACTORS, 100).

main(["version"]) ->
    io:format("version Erlang OTP-~s erts-~s~n", [otp_version(), erlang:system_info(version)]),
    halt(0);
main([Workload, SizeText]) ->
    try run(Workload, parse_size(SizeText)) of
        ok -> halt(0)
    catch
        throw:{failed, Message} ->
            io:format(standard_error, "peers (Erlang): ~s~n", [Message]),
            halt(1);
        Class:Reason:Stack ->
            io:format(standard_error, "peers (Erlang): ~p:~p~n~p~n", [Class, Reason, Stack]),
            halt(1)
    end;
main(_) ->
    io:format(standard_error, "usage: peers main version | <Workload> <size>~n", []),
    halt(64).

%% The full OTP version (e.g. 25.2.3) from the release's OTP_VERSION file, else the major one.
otp_version() ->
    Release = erlang:system_info(otp_release),
    File = filename:join([code:root_dir(), "releases", Release, "OTP_VERSION"]),
    case file:read_file(File) of
        {ok, Text} -> string:trim(binary_to_list(Text));
        {error, _} -> Release
    end.

run("MemoryPerIdleActor", N) -> memory_per_idle_actor(N);
run(Workload, N) ->
    Fun = case Workload of
              "PingPong" -> fun ping_pong/1;
              "Counting" -> fun counting/1;
              "ThreadRing" -> fun thread_ring/1;
              "ForkJoinCreation" -> fun fork_join_creation/1;
              "Fibonacci" -> fun fibonacci/1;
              _ -> fail("unknown workload: ~s", [Workload])
          end,
    WarmUp = case Workload of
                 "Fibonacci" -> max(N - 8, 2);
                 _ -> max(N div 100, 1)
             end,
    {_, _, WarmCheck, WarmExpected} = Fun(WarmUp),
    WarmCheck =:= WarmExpected orelse fail("~s: warm-up run failed", [Workload]),
    {Units, Seconds, Check, Expected} = Fun(N),
    report(Workload, Units, Seconds, Check, Expected).

parse_size(Text) ->
    case string:to_integer(Text) of
        {Size, ""} when Size >= 1 -> Size;
        _ -> fail("bad size: ~s", [Text])
    end.

fail(Format, Args) -> throw({failed, io_lib:format(Format, Args)}).

now_ns() -> erlang:monotonic_time(nanosecond).

seconds_since(Start) -> (now_ns() - Start) / 1.0e9.

%% Prints the result line; a check that differs from its expected value fails the run.
report(Workload, Units, Seconds, Check, Expected) ->
    io:format("peer Erlang ~s ~B ~.6f ~B ~B~n", [Workload, Units, Seconds, Check, Expected]),
    case Check =:= Expected of
        true -> ok;
        false -> fail("~s: checked ~B, expected ~B", [Workload, Check, Expected])
    end.

%% --- PingPong ----------------------------------------------------------------------------
%% Ping sends {ball, self()}, Pong answers {back, Count}. Timed: from the driver's start
%% message to Ping's done after the N-th answer. Verified: Ping received N answers, and Pong
%% counted N balls.

pong(Count) ->
    receive
        {ball, Ping} ->
            Ping ! {back, Count + 1},
            pong(Count + 1);
        stop -> ok
    end.

ping(Pong, RoundTrips, Driver, Received) ->
    receive
        start ->
            Pong ! {ball, self()},
            ping(Pong, RoundTrips, Driver, Received);
        {back, PongCount} when Received + 1 =:= RoundTrips ->
            Driver ! {done, Received + 1, PongCount};
        {back, _} ->
            Pong ! {ball, self()},
            ping(Pong, RoundTrips, Driver, Received + 1)
    end.

ping_pong(N) ->
    Driver = self(),
    Pong = spawn(fun() -> pong(0) end),
    Ping = spawn(fun() -> ping(Pong, N, Driver, 0) end),
    Start = now_ns(),
    Ping ! start,
    receive {done, Received, PongCount} -> ok end,
    Seconds = seconds_since(Start),
    Pong ! stop,
    PongCount =:= N orelse fail("PingPong: Pong counted ~B balls", [PongCount]),
    {N, Seconds, Received, N}.

%% --- Counting ----------------------------------------------------------------------------
%% The driver sends N one-way increments to the counter, then asks for the total. Timed: from
%% the first increment to the total's reply. Verified: total == N.

counter(Count) ->
    receive
        increment -> counter(Count + 1);
        {total, From} ->
            From ! {total, Count},
            counter(Count);
        stop -> ok
    end.

send_increments(_, 0) -> ok;
send_increments(Counter, Left) ->
    Counter ! increment,
    send_increments(Counter, Left - 1).

counting(N) ->
    Counter = spawn(fun() -> counter(0) end),
    Start = now_ns(),
    send_increments(Counter, N),
    Counter ! {total, self()},
    receive {total, Total} -> ok end,
    Seconds = seconds_since(Start),
    Counter ! stop,
    {N, Seconds, Total, N}.

%% --- ThreadRing --------------------------------------------------------------------------
%% 100 processes in a ring; the driver gives the token (N) to process 0; each holder forwards
%% it, decremented, to its neighbour; the holder of 0 reports. Timed: from giving the token to
%% the report. Verified (after the window): the hops the processes counted add up to N, and
%% the final holder is process N rem 100.

ring_node(Id, Driver) ->
    receive {next, Next} -> ring_node(Id, Driver, Next, 0) end.

ring_node(Id, Driver, Next, Hops) ->
    receive
        {token, 0} ->
            Driver ! {done, Id},
            ring_node(Id, Driver, Next, Hops);
        {token, Token} ->
            Next ! {token, Token - 1},
            ring_node(Id, Driver, Next, Hops + 1);
        {hops, From} ->
            From ! {hops, self(), Hops},
            ring_node(Id, Driver, Next, Hops);
        stop -> ok
    end.

thread_ring(N) ->
    Driver = self(),
    Ring = [spawn(fun() -> ring_node(Id, Driver) end) || Id <- lists:seq(0, ?RING_ACTORS - 1)],
    Nexts = tl(Ring) ++ [hd(Ring)],
    lists:foreach(fun({Node, Next}) -> Node ! {next, Next} end, lists:zip(Ring, Nexts)),
    Start = now_ns(),
    hd(Ring) ! {token, N},
    receive {done, Holder} -> ok end,
    Seconds = seconds_since(Start),
    Hops = lists:sum([begin
                          Node ! {hops, Driver},
                          receive {hops, Node, H} -> H end
                      end || Node <- Ring]),
    lists:foreach(fun(Node) -> Node ! stop end, Ring),
    Holder =:= N rem ?RING_ACTORS
        orelse fail("ThreadRing: final holder ~B, expected ~B", [Holder, N rem ?RING_ACTORS]),
    {N, Seconds, Hops, N}.

%% --- ForkJoinCreation --------------------------------------------------------------------
%% The driver spawns N processes and sends each one message; each answers with a small result
%% (Troupe's mix(0, i) = i + 7) and ends. Timed: from the first spawn to the N-th
%% acknowledgement. Verified: N acknowledgements, and the sum of their results. The driver keeps
%% its message queue off its heap (the documented setting for a process that may queue many
%% messages): up to N acknowledgements wait there while it spawns, and on the heap every
%% garbage collection would copy them (about 2.5x slower at N = 500,000).

fork_join_worker(Driver) ->
    receive {work, Value} -> Driver ! {ack, Value + 7} end.

spawn_workers(_, N, N) -> ok;
spawn_workers(Driver, I, N) ->
    spawn(fun() -> fork_join_worker(Driver) end) ! {work, I},
    spawn_workers(Driver, I + 1, N).

collect_acks(0, Acks, Sum) -> {Acks, Sum};
collect_acks(Left, Acks, Sum) ->
    receive {ack, Result} -> collect_acks(Left - 1, Acks + 1, Sum + Result) end.

fork_join_creation(N) ->
    process_flag(message_queue_data, off_heap),
    Start = now_ns(),
    spawn_workers(self(), 0, N),
    {Acks, Sum} = collect_acks(N, 0, 0),
    Seconds = seconds_since(Start),
    ExpectedSum = N * (N - 1) div 2 + 7 * N,
    Sum =:= ExpectedSum
        orelse fail("ForkJoinCreation: sum of results ~B, expected ~B", [Sum, ExpectedSum]),
    {N, Seconds, Acks, N}.

%% --- Fibonacci ---------------------------------------------------------------------------
%% fib(n) by recursive process creation: the process asked for K > 1 spawns two children,
%% sends them K - 1 and K - 2, adds their answers and answers its parent, then ends. Each
%% answer also carries the number of processes of its subtree. Timed: from the driver's
%% request to the root's answer. Verified: the value equals the iterative fib(n); the
%% processes counted equal 2 * fib(n + 1) - 1.

fib_node(Parent) ->
    receive
        {fib, K} when K < 2 ->
            Parent ! {answer, K, 1};
        {fib, K} ->
            Me = self(),
            spawn(fun() -> fib_node(Me) end) ! {fib, K - 1},
            spawn(fun() -> fib_node(Me) end) ! {fib, K - 2},
            receive {answer, V1, A1} -> ok end,
            receive {answer, V2, A2} -> ok end,
            Parent ! {answer, V1 + V2, A1 + A2 + 1}
    end.

iterative_fib(N) -> iterative_fib(N, 0, 1).
iterative_fib(0, A, _) -> A;
iterative_fib(N, A, B) -> iterative_fib(N - 1, B, A + B).

fibonacci(N) ->
    Driver = self(),
    Start = now_ns(),
    spawn(fun() -> fib_node(Driver) end) ! {fib, N},
    receive {answer, Value, Actors} -> ok end,
    Seconds = seconds_since(Start),
    ExpectedActors = 2 * iterative_fib(N + 1) - 1,
    Actors =:= ExpectedActors
        orelse fail("Fibonacci: ~B processes counted, expected ~B", [Actors, ExpectedActors]),
    {Actors, Seconds, Value, iterative_fib(N)}.

%% --- MemoryPerIdleActor ------------------------------------------------------------------
%% N processes, each handled one message (and acknowledged it) and then waits in receive.
%% Measured: growth of erlang:memory(processes) (heaps, stacks, process control blocks and
%% queues of all processes) from before the first spawn to after the last acknowledgement,
%% divided by N; the driver garbage-collects itself before each reading and keeps no list of
%% the pids (a pid does not keep a process alive). Processes are made in batches of 1,000
%% whose acknowledgements are received before the next. The VM's resident-set growth is
%% printed to stderr for comparison.

idle(Value) ->
    receive
        {touch, From} ->
            From ! ack,
            idle(Value + 1)
    end.

spawn_idle(0) -> ok;
spawn_idle(Left) ->
    Batch = min(Left, 1000),
    Driver = self(),
    [spawn(fun() -> idle(0) end) ! {touch, Driver} || _ <- lists:seq(1, Batch)],
    [receive ack -> ok end || _ <- lists:seq(1, Batch)],
    spawn_idle(Left - Batch).

resident_bytes() ->
    {ok, Status} = file:read_file("/proc/self/status"),
    [Line] = [L || L <- binary:split(Status, <<"\n">>, [global]), binary:match(L, <<"VmRSS:">>) =/= nomatch],
    [_, KB | _] = string:lexemes(binary_to_list(Line), " \t"),
    list_to_integer(KB) * 1024.

memory_per_idle_actor(N) ->
    spawn_idle(100),  % warm-up
    garbage_collect(),
    Before = erlang:memory(processes),
    RssBefore = resident_bytes(),
    spawn_idle(N),
    garbage_collect(),
    After = erlang:memory(processes),
    RssAfter = resident_bytes(),
    PerActor = (After - Before) div N,
    io:format(standard_error,
              "peers (Erlang): MemoryPerIdleActor: erlang:memory(processes) +~B B; "
              "resident set +~B B = ~B B per process~n",
              [After - Before, RssAfter - RssBefore, (RssAfter - RssBefore) div N]),
    io:format("peer Erlang MemoryPerIdleActor ~B 0 ~B -~n", [N, PerActor]),
    PerActor > 0 orelse fail("MemoryPerIdleActor: no growth measured", []),
    ok.
