// Command walkthrough runs the README's walkthrough, and the checked
// commands of the docs, against a started hookjet and fails when a command
// no longer works or prints something else than the page shows (`make
// walkthrough`, part of `make check`).
//
// The commands and their output are read from the pages themselves, from the
// fenced blocks that follow a marker comment, so pages and check cannot
// drift. -readme names a page and may be given several times; a name with
// glob characters (docs/*.md) stands for every file it matches, and a page
// without markers is skipped. Terminal 1 and 2 are set up once, by one page
// (README.md); the terminal 3 blocks of every page run in one session, in
// the order the pages are named, each page continuing where the one before
// it left off:
//
//	<!-- walkthrough: terminal 1 -->   a sh block: the server, started in the
//	                                   background ("make run" runs the Makefile's
//	                                   run recipe); ready once /readyz answers 200
//	<!-- walkthrough: terminal 2 -->   a console block: "$ command" started in
//	                                   the background, then what it prints; that
//	                                   is compared when it is stopped
//	<!-- walkthrough: terminal 3 -->   console blocks: each "$ command" runs to
//	                                   completion and must print the lines after it
//
// In expected output a line that is only "..." stands for any number of
// lines, and "..." inside a line for any text. A "$ # ..." line is a step for
// the reader: "Ctrl-C in terminal 2" stops terminal 2 (and checks its
// output), "again in terminal 2" starts it again; other comments are
// skipped. Read-only commands (status, endpoints, dlq list|stats) are
// repeated until their output matches, for up to -wait, since what they show
// settles after deliveries; every other command runs once.
//
// Everything runs on free loopback ports and in a temporary data_dir: the
// pages' 127.0.0.1:4222 (NATS), 127.0.0.1:8089 (admin API), 127.0.0.1:9000
// (receiver) and 127.0.0.1:8090 (inbound gateway) are replaced in commands,
// in expected output and in a copy of examples/hookjet.yaml. bin/ and
// bin/tools are put first on PATH, so a page may say "hookjet" for
// ./bin/hookjet.
package main
