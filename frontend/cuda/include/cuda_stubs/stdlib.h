/* Stub of <stdlib.h> for reading CUDA sources: declarations only. */
#pragma once
extern "C" {
void *malloc(size_t);
void *calloc(size_t, size_t);
void *realloc(void *, size_t);
void free(void *);
void exit(int);
void abort(void);
int atoi(const char *);
long atol(const char *);
double atof(const char *);
long strtol(const char *, char **, int);
int rand(void);
void srand(unsigned int);
char *getenv(const char *);
}
#define RAND_MAX 2147483647
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
