/* Which 32-bit seeds of mt19937_64 give a value among their first K draws?

Why: TensorFlow 2.21 draws each RunGraph request id with
tsl::random::ThreadLocalNew64 (GetUniqueRequestId), a thread_local
std::mt19937_64 seeded by one 32-bit std::random_device draw, and its master
runs every step on a new thread. If that is where a refused request's id
came from, the id is one of the first few draws of some 32-bit seed; a
random 64-bit value is one with odds of about K * 2^32 / 2^64, 1 in 10^8.
Searched for the id CI refused at a3cc3ec (-763744274351895007, worker1 of
a synchronous loopback cluster): it is draw 1 (the second) of seed
1671799294, found by a search of every seed in 14.7 minutes on 2 cores
(alone, 7 Dec 2026). Check it with the standard library alone:

  printf '#include <random>\n#include <cstdio>\nint main() { std::mt19937_64 g(1671799294u); g(); std::printf("%%lld\\n", (long long)g()); }\n' \
    | g++ -x c++ - -o /tmp/id && /tmp/id

Build and run (every seed, both cores):
  gcc -O3 -march=native -fopenmp studies/request_id_seed.c -o /tmp/request_id_seed
  /tmp/request_id_seed -763744274351895007
A draw needs only state words k, k+1 and k+156 of the seeded generator, so
each seed is seeded to word 156+K and no further; L seeds at a time side by
side let the compiler vectorise the seeding.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define K 32   /* draws looked at per seed */
#define L 16   /* seeds side by side */
#define M 156  /* mt19937_64's middle word */

static const uint64_t F = 6364136223846793005ULL, A = 0xB5026F5AA96619E9ULL;
static const uint64_t UPPER = 0xFFFFFFFF80000000ULL, LOWER = 0x7FFFFFFFULL;

static inline uint64_t temper(uint64_t y) {
  y ^= (y >> 29) & 0x5555555555555555ULL;
  y ^= (y << 17) & 0x71D67FFFEDA60000ULL;
  y ^= (y << 37) & 0xFFF7EEE000000000ULL;
  return y ^ (y >> 43);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 9) {
    fprintf(stderr, "usage: %s VALUE [VALUE ...] (at most 8, as signed or "
            "unsigned 64-bit integers)\n", argv[0]);
    return 2;
  }
  int n = argc - 1;
  uint64_t wanted[8];
  for (int q = 0; q < n; q++)
    wanted[q] = argv[q + 1][0] == '-' ? (uint64_t)strtoll(argv[q + 1], 0, 0)
                                      : strtoull(argv[q + 1], 0, 0);
  const long per_block = L * 4096, blocks = (1L << 32) / per_block;
  #pragma omp parallel for schedule(dynamic, 1)
  for (long b = 0; b < blocks; b++) {
    for (long s0 = b * per_block; s0 < (b + 1) * per_block; s0 += L) {
      uint64_t mt[M + K + 1][L];
      for (int j = 0; j < L; j++) mt[0][j] = (uint64_t)(s0 + j);
      for (int i = 1; i <= M + K; i++)
        for (int j = 0; j < L; j++)
          mt[i][j] = F * (mt[i - 1][j] ^ (mt[i - 1][j] >> 62)) + i;
      for (int k = 0; k < K; k++)
        for (int j = 0; j < L; j++) {
          uint64_t x = (mt[k][j] & UPPER) | (mt[k + 1][j] & LOWER);
          uint64_t y = temper(mt[k + M][j] ^ (x >> 1) ^ ((x & 1) ? A : 0));
          for (int q = 0; q < n; q++)
            if (y == wanted[q]) {
              #pragma omp critical
              {
                printf("%s is draw %d of seed %ld\n", argv[q + 1], k, s0 + j);
                fflush(stdout);
              }
            }
        }
    }
  }
  return 0;
}
