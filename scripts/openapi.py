#!/usr/bin/env python3
"""The coordinator's API description, written as data: `python3 scripts/openapi.py > coordinator/openapi.json`.

The end-to-end tests hold real responses to the JSON it writes (tests/lib.rs, check_documented):
change this with the API, then regenerate."""
import json
def obj(props, required=None, extra=False, desc=None):
    o={"type":"object","properties":props,"required":list(props) if required is None else required,"additionalProperties":extra}
    if desc: o["description"]=desc
    return o
S=lambda d=None,**k: dict({"type":"string"},**({"description":d} if d else {}),**k)
I=lambda d=None: dict({"type":"integer"},**({"description":d} if d else {}))
N=lambda d=None: dict({"type":"number"},**({"description":d} if d else {}))
B={"type":"boolean"}
UUID={"type":"string","format":"uuid"}
TIME={"type":"string","format":"date-time"}
def null(s): 
    s=dict(s); t=s["type"]; s["type"]=[t,"null"]; return s
def arr(items, n=None, d=None):
    a={"type":"array","items":items}
    if n is not None: a["minItems"]=n; a["maxItems"]=n
    if d: a["description"]=d
    return a
ref=lambda n: {"$ref":f"#/components/schemas/{n}"}
pair=lambda d: arr(N(),2,d+" (first bot, second bot)")
ipair=lambda d: arr(I(),2,d+" (first bot, second bot)")
KINDS=["match","endgame","wintable","selfplay","leaves","tune"]
schemas={
 "ApiError": obj({"error":S("what was wrong, naming the field or the thing not found")}),
 "Summary": obj({
   "id":UUID,"name":S(),"kind":S(", ".join(KINDS[:-1])+" or "+KINDS[-1],enum=KINDS),
   "status":S(enum=["queued","running","finished","failed","stopped"]),"priority":I(),
   "created_at":TIME,"finished_at":null(TIME),"cells":I(),
   "games":I("done so far, in `counted`"),"target_games":I("the whole experiment in `counted`; a cell that ended early on its own verdict (SPRT, bots alike) counts what it did, one a researcher stopped keeps its target"),
   "counted":S("what `games` counts",enum=["games","positions"]),
   "games_per_hour":N("while running: over the last 15 minutes; once over: from start to finish"),
   "result":null(S("the result in a line: a match's win rate with its 95% interval (a grid's best cell's), a leave-table run's latest rating against greedy; null for kinds whose result is a table")),
   "llr":null(N("a one-cell SPRT's log-likelihood ratio")),
   "llr_bounds":{"type":["array","null"],"items":N(),"minItems":2,"maxItems":2,"description":"the SPRT's lower and upper bounds"}}),
 "MatchTally": obj({
   "games":I(),"wins":I(),"draws":I(),"losses":I(),
   "pair_points":arr(I(),5,"complete pairs by the first bot's half-points over both legs: 0..4"),
   "score":ipair("final scores summed"),"score_sq":ipair("squares of final scores summed"),
   "bingos":ipair("bingos"),"turns":ipair("turns"),"first_wins":I(),"first_draws":I(),
   "micros":ipair("microseconds spent choosing moves")},
   desc="Counts from the first bot's view, whatever seat it sat in."),
 "CellView": obj({
   "id":UUID,"index":I(),"params":{"type":"object","description":"the cell's grid values by axis name"},
   "bots":null(arr(S(),2)),"status":S("waiting: for what an earlier cell makes (a generation's table)",enum=["waiting","running","finished","failed","stopped"]),
   "stop_reason":null(S()),"games":I(),"target_games":I(),"wins":I(),"draws":I(),"losses":I(),"pairs":I(),
   "win_rate":null(N()),"ci_low":null(N("95% interval; null where the games give none")),"ci_high":null(N()),
   "mean_score":pair("mean final score"),"mean_bingos":pair("bingos per game"),
   "points_per_turn":pair("points per turn"),"ms_per_move":pair("milliseconds per move"),
   "first_player_rate":null(N()),
   "evidence":S("nothing: no games; identical: the bots played alike (no interval, no SPRT); uniform: every pair alike (conservative statistics); varied",enum=["nothing","identical","uniform","varied"]),
   "caveat":null(S("said instead of a win rate, e.g. `bots are identical on these deals`")),
   "sprt_llr":null(N()),"sprt_bounds":null(arr(N(),2,"the SPRT's lower and upper LLR bounds")),
   "tally":ref("MatchTally")}),
 "ParkedBatch": obj({"batch_id":UUID,"cell_index":I(),"failures":I(),"error":null(S())}),
 "Contributor": obj({"worker_id":UUID,"name":S(),"games":I("games, or positions for endgames"),"batches":I()}),
 "Step": obj({"games":I(),"win_rate":N(),"ci_low":null(N()),"ci_high":null(N()),"llr":null(N())},
   desc="A cell's standing after one of its batches."),
 "History": obj({"convergence":arr(arr(ref("Step")),None,"per cell, by index"),"start":null(TIME),
   "bucket_secs":I(),"games":arr(I(),None,"results recorded in consecutive buckets from `start`"),
   "ms_per_move":arr({"type":["array","null"],"items":N(),"minItems":3,"maxItems":3},None,"per cell, by index: the first bot's milliseconds a move and its 95% interval over the cell's batches [mean, low, high], or null before three batches")}),
 "RecordedBatch": obj({"batch_id":UUID,"cell_id":UUID,"worker_id":UUID,
   "result":{"type":"object","required":["kind"],"properties":{"kind":S(enum=KINDS)},
             "description":"the counted result: a MatchTally's fields for matches and selfplay"},
   "first_unit":I(),"units":I(),"elapsed_ms":I(),"received_at":TIME}),
 "SolveRow": obj({"index":I(),"pass":S(enum=["solve","check"]),"worker_id":UUID,"worker":S(),"trusted":B,"cgp":S(),
   "skipped":B,"value":I(),"exact":B,"best":S(),"sequence":S(),"nodes":I(),"ms":I(),"disagrees":B,
   "verdict":null(S(enum=["agrees","disagrees","unverified","pending",None]))}),
 "WorkerView": obj({"id":UUID,"name":S(),"threads":I(),"created_at":TIME,"last_seen":TIME,
   "seconds_since_seen":N(),"games":I("games played"),"positions":I("endgame positions solved"),"batches":I(),
   "games_per_sec":null(N()),"leased_batches":I(),"rejected":I("uploads refused"),"owner":S(),
   "trust":null(S("how its owner is trusted: named by the operator, or earned against trusted replicas",enum=["operator","earned",None])),
   "validated":I(),"mismatches":I(),"quarantine_reason":null(S()),
   "capabilities":arr(S(enum=["onnx","cuda"]),None,"what it can run beyond the engine: onnx (CNN bots), cuda (their nets on a GPU)"),
   "gpu_name":null(S("its GPU, where one answered")),"gpu_memory_mb":null(I())}),
 "Version": obj({"service":S("always `lexhive`",enum=["lexhive"]),"protocol":I("the volunteers' protocol version"),"version":S("the coordinator's build"),
   "registration_work":I("leading zero bits of proof of work an owner registration needs (0: none)")}),
 "Whoami": obj({"role":S(enum=["worker","owner","researcher","admin"]),"worker_id":UUID},required=["role"]),
 "Generation": obj({"generation":I("from 0"),"artifact":S("what it made (a leave table), by sha256: GET /artifacts/{sha256}"),
   "games":I("the games it was made from"),"made_at":TIME,
   "kept":null(S("the artifact the run holds after this generation: its own, or the one its gate kept; the last generation's is the run's result (null while the gate plays)")),
   "gate":obj({"against":null(S("the table this generation's was held against (null when not gated)")),
               "verdict":null(S("why the run kept what it kept (null while the gate plays, or not gated)"))},desc="The generation's gate, in a gated leaves run.")},desc="One generation of a run that improves itself."),
 "TuneStep": obj({"iteration":I(),"theta":arr(N(),None,"the parameters before the step, in the spec's order (CMA-ES: its mean)"),
   "c":arr(N(),None,"each parameter's spread: SPSA's perturbation c_k; CMA-ES's standard deviation"),"delta":arr(N(),None,"SPSA's sign per parameter, +1 or -1; empty for CMA-ES"),
   "score_plus":N("score against the reference (wins and half the draws): SPSA's of theta + c delta, CMA-ES's best point's"),"score_minus":N("SPSA's of theta - c delta; CMA-ES's worst point's"),
   "next":arr(N(),None,"the parameters after the step"),
   "tried":arr(obj({"params":arr(N(),None,"as played"),"score":N()}),None,"every bot the iteration played"),
   "cma":obj({"mean":arr(N()),"sigma":N(),"cov":arr(arr(N())),"path_sigma":arr(N()),"path_c":arr(N()),"told":I(),"lambda":I()},
      desc="CMA-ES's state after the step, in coordinates where each range is [0, 1] (CMA-ES runs only)")},
   required=["iteration","theta","c","delta","score_plus","score_minus","next","tried"],desc="One step of a tuning run (SPSA or CMA-ES)."),
 "Tuning": obj({"params":{"type":"object","additionalProperties":{"type":"number"},"description":"each parameter's value now (the last step's result)"},
   "history":arr(ref("TuneStep"))}),
 "Submitted": obj({"id":UUID,"cells":I(),"games":I(),"counted":S(enum=["games","positions"])}),
}
det=dict(schemas["Summary"]); det=json.loads(json.dumps(det))
det["properties"].update({"spec":{"type":"object","description":"the experiment file as parsed"},
  "cells":arr(ref("CellView")),"batches":{"type":"object","additionalProperties":{"type":"integer"},
  "description":"batches by state: queued, leased, done, parked, cancelled"},
  "parked":arr(ref("ParkedBatch")),"waiting_for_others":I("queued batches only a worker of another owner may take (replicas, cross-checks)"),"contributors":arr(ref("Contributor")),"output_sha256":null(S()),
  "needs":arr(S(enum=["onnx","cuda"]),None,"what a worker must run to be given its batches: onnx (a CNN bot), cuda (a GPU)"),
  "log_bytes":I("the counted games' logs (GCG and CSV), gzip-compressed, in the log store"),
  "generations":arr(ref("Generation"),None,"a run that improves itself (kind leaves): each generation's artifact, in order; the last one's `kept` is the run's result")})
det["required"]=list(det["properties"])
det["properties"]["tuning"]=ref("Tuning")
schemas["Detail"]=det
err=lambda d: {"description":d,"content":{"application/json":{"schema":ref("ApiError")}}}
js=lambda s,d="OK": {"description":d,"content":{"application/json":{"schema":s}}}
csv=lambda cols: {"description":"CSV (RFC 4180), first row the header: "+cols,"content":{"text/csv":{"schema":{"type":"string"}}}}
idp={"name":"id","in":"path","required":True,"schema":UUID}
sec=[{"bearer":[]}]
paths={
 "/experiments":{
  "get":{"summary":"List experiments (newest first, at most 500)","parameters":[
     {"name":"status","in":"query","schema":S(enum=["queued","running","finished","failed","stopped"])},
     {"name":"sort","in":"query","schema":S(enum=["created","name","priority","status"])}],
   "responses":{"200":js(arr(ref("Summary"))),"400":err("a filter or order that is not one of the listed values")}},
  "post":{"summary":"Submit an experiment file (TOML)","security":sec,
   "requestBody":{"required":True,"content":{"text/plain":{"schema":{"type":"string"}}}},
   "responses":{"200":js(ref("Submitted")),"401":err("no or unknown token"),"403":err("not a researcher's token"),
     "422":err("the file is not a valid experiment: the message names the line or field")}}},
 "/experiments/{id}":{"parameters":[idp],
  "get":{"summary":"An experiment: summary, parsed spec, cells with their statistics, batches, contributors",
   "responses":{"200":js(ref("Detail")),"404":err("no such experiment")}},
  "delete":{"summary":"Delete an experiment (its submitter or an admin)","security":sec,
   "responses":{"200":js(obj({"deleted":UUID})),"403":err("not the submitter"),"404":err("no such experiment")}}},
 "/experiments/{id}/priority":{"parameters":[idp],
  "post":{"summary":"Set the priority (its submitter or an admin); queued batches follow","security":sec,
   "requestBody":{"required":True,"content":{"application/json":{"schema":obj({"priority":I()})}}},
   "responses":{"200":js(obj({"id":UUID,"priority":I()})),"403":err("not the submitter"),"404":err("no such experiment")}}},
 "/experiments/{id}/stop":{"parameters":[idp],
  "post":{"summary":"Stop a queued or running experiment (its submitter or an admin)","security":sec,
   "responses":{"200":js(obj({"stopped":UUID})),"403":err("not the submitter"),"404":err("no such experiment"),"409":err("already over")}}},
 "/experiments/{id}/history":{"parameters":[idp],
  "get":{"summary":"Each cell's win rate, interval and LLR after each counted batch; results over time",
   "responses":{"200":js(ref("History")),"404":err("no such experiment")}}},
 "/experiments/{id}/batches":{"parameters":[idp],
  "get":{"summary":"Every counted batch result, without logs","responses":{"200":js(arr(ref("RecordedBatch")))}}},
 "/experiments/{id}/endgames":{"parameters":[idp],
  "get":{"summary":"Every endgame solve with its verdict","responses":{"200":js(arr(ref("SolveRow")))}}},
 "/experiments/{id}/cells.csv":{"parameters":[idp],
  "get":{"summary":"Cells as CSV (the first eight columns are stable; then one column per grid axis, `axis.NAME`)","responses":{"200":csv("cell,games,wins,draws,losses,win_rate,ci_low,ci_high,status,stop_reason,bot1,bot2,params,mean_score1,mean_score2,ms_per_move1,ms_per_move2,sprt_llr,evidence,caveat,target_games,cell_id[,axis.NAME...]"),"404":err("no such experiment")}}},
 "/experiments/{id}/batches.csv":{"parameters":[idp],
  "get":{"summary":"Counted batches as CSV","responses":{"200":csv("batch_id,cell,first_unit,units,counted,done,wins,draws,losses,worker,elapsed_ms,received_at")}}},
 "/experiments/{id}/contributors.csv":{"parameters":[idp],
  "get":{"summary":"Contributors as CSV","responses":{"200":csv("worker,done,counted,batches,worker_id"),"404":err("no such experiment")}}},
 "/experiments/{id}/endgames.csv":{"parameters":[idp],
  "get":{"summary":"Endgame solutions as CSV, a row per position","responses":{"200":csv("position,value,state,shown_value,shown_exact,best,sequence,nodes,ms,solves,agreed_by,disagreed,cgp")}}},
 "/whoami":{"get":{"summary":"What the caller's token is (its role; a worker token's worker)","security":sec,"responses":{"200":js(ref("Whoami")),"401":err("no or unknown token")}}},
 "/version":{"get":{"summary":"The service, the volunteers' protocol version and the coordinator's build","responses":{"200":js(ref("Version"))}}},
 "/experiments/{id}/games.gcg.gz":{"parameters":[idp],
  "get":{"summary":"Every counted game as the volunteers logged it (GCG, each after a `#lexhive-game N` line), in cell and deal order: one gzip member per batch, one gzip stream in all. `coordinator export` writes the same bytes.",
   "responses":{"200":{"description":"gzip","content":{"application/gzip":{"schema":{"type":"string","format":"binary"}}}},
     "404":err("no such experiment, or an endgame experiment (it has solutions, not games)")}}},
 "/workers":{"get":{"summary":"Every volunteer (most recently seen first, at most 1,000)","responses":{"200":js(arr(ref("WorkerView")))}}},
 "/batches/{id}/logs/{which}":{"parameters":[idp,{"name":"which","in":"path","required":True,"schema":S(enum=["gcg","csv"])}],
  "get":{"summary":"A validated batch's logs, gzip-compressed (for admins, a pending one's too)","security":sec,"responses":{"200":{"description":"gzip","content":{"application/gzip":{"schema":{"type":"string","format":"binary"}}}},"401":err("no or unknown token"),"403":err("not a researcher's or admin's token"),"404":err("no validated result for the batch")}}},
 "/artifacts/{sha256}":{"parameters":[{"name":"sha256","in":"path","required":True,"schema":S()}],
  "get":{"summary":"A data file (lexicon, leaves, distribution, layout, win table) by its sha256","responses":{"200":{"description":"the file's bytes","content":{"application/octet-stream":{"schema":{"type":"string","format":"binary"}}}},"404":err("no such artifact")}}},
}
vol={"/owners":"Register an owner (volunteers' accounts)","/workers/register":"Register a worker","/claim":"Claim a batch (or be told to wait)",
 "/batches/{id}/heartbeat":"Extend a lease","/batches/{id}/release":"Give a batch back","/batches/{id}/fail":"Report a batch that failed",
 "/batches/{id}/result":"Upload a batch's result and logs"}
for p,d in vol.items():
  op={"summary":d,"tags":["volunteers"],"description":"The volunteers' protocol: request and response bodies are the structs of `shared::protocol` (versioned by `PROTOCOL_VERSION`); not for researchers' scripts.",
      "requestBody":{"required":True,"content":{"application/json":{"schema":{"type":"object"}}}},
      "responses":{"200":js({"type":"object"}),"503":err("the coordinator is shedding load: wait for Retry-After")}}
  if p!="/owners" and p!="/workers/register": op["security"]=sec
  item={"post":op}
  if "{id}" in p: item["parameters"]=[idp]
  paths[p]=item
doc={"openapi":"3.1.0","info":{"title":"lexhive coordinator API","version":"1",
  "description":"The JSON and CSV API under /api/v1 that the dashboards, `worker experiments` and `worker submit` use. Errors are `{\"error\": \"...\"}` with a 4xx or 5xx status. Researchers' requests carry `Authorization: Bearer TOKEN` (`coordinator token create --role researcher`)."},
 "servers":[{"url":"/api/v1"}],"paths":paths,
 "components":{"schemas":schemas,"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}}}}
print(json.dumps(doc,indent=1))
