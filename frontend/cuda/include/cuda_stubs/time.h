/* Stub of <time.h> for reading CUDA sources. */
#pragma once
typedef long time_t;
typedef long clock_t;
extern "C" { time_t time(time_t *); clock_t clock(void); }
#define CLOCKS_PER_SEC 1000000
