/* Stub of <stdio.h> for reading CUDA sources: declarations only. */
#pragma once
typedef struct __tiletraffic_FILE FILE;
extern FILE *stdin, *stdout, *stderr;
extern "C" {
int printf(const char *, ...);
int fprintf(FILE *, const char *, ...);
int sprintf(char *, const char *, ...);
int snprintf(char *, size_t, const char *, ...);
int puts(const char *);
int putchar(int);
FILE *fopen(const char *, const char *);
int fclose(FILE *);
int fflush(FILE *);
size_t fread(void *, size_t, size_t, FILE *);
size_t fwrite(const void *, size_t, size_t, FILE *);
int fscanf(FILE *, const char *, ...);
int scanf(const char *, ...);
}
