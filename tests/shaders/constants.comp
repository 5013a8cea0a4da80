#version 450
// Writes its specialization constants and push constants to one buffer, in place
// increments another: what a dispatch passes and that every dispatch starts afresh.
layout(local_size_x = 1) in;
layout(constant_id = 0) const uint U = 1;
layout(constant_id = 3) const int I = 1;
layout(constant_id = 7) const float F = 1.0;
layout(constant_id = 9) const bool B = false;
layout(std430, set = 0, binding = 2) writeonly buffer Out { float values[]; };
layout(std430, set = 2, binding = 0) buffer Counter { uint counts[]; };
layout(std140, set = 1, binding = 1) uniform Params { float scale; } params;
layout(push_constant) uniform Push { uint n; float x; int y; } pc;

void main() {
    values[0] = float(U);
    values[1] = float(I);
    values[2] = F;
    values[3] = B ? 1.0 : 0.0;
    values[4] = float(pc.n);
    values[5] = pc.x;
    values[6] = float(pc.y);
    values[7] = params.scale;
    for (uint i = 0; i < pc.n; ++i) {
        counts[i] += 1u;
    }
}
